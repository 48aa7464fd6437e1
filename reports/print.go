package reports

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/xuri/excelize/v2"
)

// Printing. A controller prints the workbook, or saves it as PDF for the
// month's binder, so every sheet must read on paper: no text over other
// text, nothing under 7 pt, no label cut off. LibreOffice and Excel give a
// column w characters wide about pointsPerChar points at 100 %, in the
// workbook's 11 pt font.
const (
	pointsPerChar = 7.0
	// The narrower of US Letter and A4 in landscape (Letter, 11 in) less
	// the side margins; A4 is wider, so a sheet that fits Letter fits A4.
	printableWidth = 11*72 - 2*marginSide*72
	marginSide     = 0.4 // inches
	// minPrintScale prints 11 pt text, a chart's labels included, at
	// 7.26 pt: the smallest a sheet is ever printed. A sheet one page wide
	// at it or larger prints one page wide; a wider one prints at it,
	// across as many pages as its columns need.
	minPrintScale = 66
	maxPrintScale = 100
	// lineHeight is the points a wrapped line of 11 pt text takes in a
	// row; bold text, wider, is counted boldWidth as wide.
	lineHeight = 15.0
	boldWidth  = 1.2
)

// printWidth notes that sheet's printed content reaches width characters
// (its columns, or a chart beside them); printSetup fits it to the page.
func (b *builder) printWidth(sheet string, width float64) {
	if b.printWidths == nil {
		b.printWidths = map[string]float64{}
	}
	b.printWidths[sheet] = max(b.printWidths[sheet], width)
}

// printScale is the scale sheet prints at, and whether it runs across
// pages: as large as lets its width fit the page, at most 100 %, at least
// minPrintScale.
func printScale(width float64) (scale uint, across bool) {
	if width <= 0 {
		return maxPrintScale, false
	}
	// 3 % to spare: a column is a few points wider than its characters.
	fit := int(0.97 * printableWidth / (width * pointsPerChar) * 100)
	switch {
	case fit >= maxPrintScale:
		return maxPrintScale, false
	case fit >= minPrintScale:
		return uint(fit), false
	}
	return minPrintScale, true
}

// printSetup gives a sheet the page setup a controller prints it with:
// landscape, at the scale printScale chooses (never fitted smaller than
// legible), the header row repeated on every page when the sheet's table
// starts at row 1 (every sheet but the Summary), and a footer naming the
// month, the sheet, the page of how many, and when the workbook was
// generated. A sheet too wide for one page runs across pages, over then
// down, so a band of rows reads left to right before the next, and repeats
// its first column, the row's key, on every page. Streamed sheets (Detail)
// take it before their stream starts: excelize writes a streamed sheet's
// page setup when it flushes.
func (b *builder) printSetup(sheet string, headerRow bool) error {
	scale, across := printScale(b.printWidths[sheet])
	landscape, order := "landscape", "overThenDown"
	if err := b.f.SetPageLayout(sheet, &excelize.PageLayoutOptions{
		Orientation: &landscape,
		AdjustTo:    &scale,
		PageOrder:   &order,
	}); err != nil {
		return fmt.Errorf("page layout of %s: %w", sheet, err)
	}
	side, top, bottom, header, footer := marginSide, 0.5, 0.6, 0.2, 0.25
	if err := b.f.SetPageMargins(sheet, &excelize.PageLayoutMarginsOptions{
		Left: &side, Right: &side, Top: &top, Bottom: &bottom, Header: &header, Footer: &footer,
	}); err != nil {
		return fmt.Errorf("page margins of %s: %w", sheet, err)
	}
	fit := false
	if err := b.f.SetSheetProps(sheet, &excelize.SheetPropsOptions{FitToPage: &fit}); err != nil {
		return fmt.Errorf("scale %s: %w", sheet, err)
	}
	text := "&L" + footerText(b.p.Month.Format(monthLayout)+" · basis "+string(b.p.Basis)) +
		"&C&A&R" + "Page &P of &N · generated " + footerText(b.now.Format("2006-01-02 15:04 UTC"))
	if err := b.f.SetHeaderFooter(sheet, &excelize.HeaderFooterOptions{OddFooter: text}); err != nil {
		return fmt.Errorf("footer of %s: %w", sheet, err)
	}
	quoted := "'" + strings.ReplaceAll(sheet, "'", "''") + "'!"
	var titles []string
	if across {
		titles = append(titles, quoted+"$A:$A")
	}
	if headerRow {
		titles = append(titles, quoted+"$1:$1")
	}
	if len(titles) > 0 {
		if err := b.f.SetDefinedName(&excelize.DefinedName{
			Name:     "_xlnm.Print_Titles",
			RefersTo: strings.Join(titles, ","),
			Scope:    sheet,
		}); err != nil {
			return fmt.Errorf("print titles of %s: %w", sheet, err)
		}
	}
	return nil
}

// footerText escapes & in text for a header or footer, where it starts a
// code (&P, &A, …).
func footerText(s string) string { return strings.ReplaceAll(s, "&", "&&") }

// wrappedLines is how many lines text takes when wrapped at word breaks in
// a column width characters wide: a little more than it takes, never
// less, so a row high enough for it never lets it run into the next row.
func wrappedLines(text string, width float64, bold bool) int {
	perLine := width - 1 // the cell's padding
	if bold {
		perLine /= boldWidth
	}
	perLine = max(perLine, 1)
	n := 0
	for _, para := range strings.Split(text, "\n") {
		n++
		used := 0.0
		for _, word := range strings.Fields(para) {
			w := float64(utf8.RuneCountInString(word))
			switch {
			case used == 0:
				used = w
			case used+1+w <= perLine:
				used += 1 + w
			default:
				n++
				used = w
			}
			for used > perLine { // a word longer than the line breaks anywhere
				n++
				used -= perLine
			}
		}
	}
	return n
}

// fitRowHeight gives row the height its wrapped cells (headers and wrapped
// texts) need in their columns' widths, so none runs into the row below.
func (b *builder) fitRowHeight(sheet string, row int, cells []cell) error {
	most, perLine := 1, lineHeight
	for i, c := range cells {
		s, ok := c.v.(string)
		if !ok || s == "" || (c.style != b.st.header && c.style != b.st.wrap && c.style != b.st.sectionWrap) {
			continue
		}
		name, err := excelize.ColumnNumberToName(i + 1)
		if err != nil {
			return err
		}
		width, err := b.f.GetColWidth(sheet, name)
		if err != nil {
			return err
		}
		if c.style == b.st.sectionWrap {
			// 12 pt, bold.
			width /= 12.0 / 11
			perLine = lineHeight * 16 / 15
		}
		most = max(most, wrappedLines(s, width, c.style != b.st.wrap))
	}
	if most == 1 {
		return nil
	}
	// Excel holds a row at most 409 points high; a longer cell (a payment
	// method's hundreds of projects) shows its first lines and the rest in
	// the cell, rather than failing the workbook.
	return b.f.SetRowHeight(sheet, row, min(float64(most)*perLine, excelize.MaxRowHeight))
}

// wrapAcross writes text in row from column A across cols columns, merged
// and wrapped, in a row as high as its lines: a sentence under a table
// prints within the page rather than running off its edge.
func (b *builder) wrapAcross(sheet string, row, cols int, text string) error {
	last, err := excelize.CoordinatesToCellName(cols, row)
	if err != nil {
		return err
	}
	first := fmt.Sprintf("A%d", row)
	if err := b.put(sheet, 1, row, cell{text, b.st.wrap}); err != nil {
		return err
	}
	if err := b.f.MergeCell(sheet, first, last); err != nil {
		return err
	}
	width := 0.0
	for c := 1; c <= cols; c++ {
		name, err := excelize.ColumnNumberToName(c)
		if err != nil {
			return err
		}
		w, err := b.f.GetColWidth(sheet, name)
		if err != nil {
			return err
		}
		width += w
	}
	if n := wrappedLines(text, width, false); n > 1 {
		return b.f.SetRowHeight(sheet, row, min(float64(n)*lineHeight, excelize.MaxRowHeight))
	}
	return nil
}
