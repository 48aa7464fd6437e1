package reports

import (
	"fmt"
	"strconv"
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
	// reasonIndent is the characters the reason style's indent takes
	// from its column's width: one indent level, a character or two as
	// Excel and LibreOffice set it, with one to spare.
	reasonIndent = 3
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

// printSetup gives a sheet read on paper whole (the Summary, a statement)
// the page setup a controller prints it with: landscape, at the scale
// printScale chooses (never fitted smaller than legible), row headerRow
// (0 for none), its table's header, repeated on every page after it, and
// the footer. A sheet too wide for one page runs across pages, over then
// down, so a band of rows reads left to right before the next, and repeats
// its first column, the row's key, on every page.
func (b *builder) printSetup(sheet string, headerRow int) error {
	scale, across := printScale(b.printWidths[sheet])
	if err := b.pageSetup(sheet, scale, ""); err != nil {
		return err
	}
	quoted := quoteSheet(sheet)
	var titles []string
	if across {
		titles = append(titles, quoted+"$A:$A")
	}
	if headerRow > 0 {
		titles = append(titles, fmt.Sprintf("%s$%d:$%d", quoted, headerRow, headerRow))
	}
	return b.printTitles(sheet, titles)
}

// pageSetup gives sheet its page: landscape at scale, over then down, the
// margins, a footer naming the month, the sheet, the page of how many, and
// when the workbook was generated, and a header saying note when there is
// one. Streamed sheets (Detail) take it before their stream starts:
// excelize writes a streamed sheet's page setup when it flushes.
func (b *builder) pageSetup(sheet string, scale uint, note string) error {
	landscape, order := "landscape", "overThenDown"
	if err := b.f.SetPageLayout(sheet, &excelize.PageLayoutOptions{
		Orientation: &landscape,
		AdjustTo:    &scale,
		PageOrder:   &order,
	}); err != nil {
		return fmt.Errorf("page layout of %s: %w", sheet, err)
	}
	side, top, bottom, header, footer := marginSide, marginTop, marginBottom, 0.2, 0.25
	if err := b.f.SetPageMargins(sheet, &excelize.PageLayoutMarginsOptions{
		Left: &side, Right: &side, Top: &top, Bottom: &bottom, Header: &header, Footer: &footer,
	}); err != nil {
		return fmt.Errorf("page margins of %s: %w", sheet, err)
	}
	fit := false
	if err := b.f.SetSheetProps(sheet, &excelize.SheetPropsOptions{FitToPage: &fit}); err != nil {
		return fmt.Errorf("scale %s: %w", sheet, err)
	}
	hf := &excelize.HeaderFooterOptions{
		OddFooter: "&L" + footerText(b.p.Month.Format(monthLayout)+" · basis "+string(b.p.Basis)) +
			"&C&A&R" + "Page &P of &N · generated " + footerText(b.now.Format("2006-01-02 15:04 UTC")),
	}
	if note != "" {
		hf.OddHeader = "&L" + footerText(note)
	}
	if err := b.f.SetHeaderFooter(sheet, hf); err != nil {
		return fmt.Errorf("header and footer of %s: %w", sheet, err)
	}
	return nil
}

// printTitles names the rows and columns sheet repeats on every page.
func (b *builder) printTitles(sheet string, titles []string) error {
	if len(titles) == 0 {
		return nil
	}
	if err := b.f.SetDefinedName(&excelize.DefinedName{
		Name:     "_xlnm.Print_Titles",
		RefersTo: strings.Join(titles, ","),
		Scope:    sheet,
	}); err != nil {
		return fmt.Errorf("print titles of %s: %w", sheet, err)
	}
	return nil
}

func quoteSheet(sheet string) string { return "'" + strings.ReplaceAll(sheet, "'", "''") + "'!" }

// A sheet of rows (every workbook sheet but the Summary) is read
// on screen, where its filters and frozen header serve; on paper, in the
// month's binder, it prints one page at most, one page wide: its columns
// from A as far as fit legibly, its rows from 1 as far as fit the page,
// and a page header saying how many rows the sheet holds and that the rest
// is on screen, not on paper. Row 1, the header, repeats on every page.

// printableHeight is the height of a landscape page less the top and
// bottom margins, in points: A4's (8.27 in), shorter than Letter's.
const (
	marginTop       = 0.5 // inches
	marginBottom    = 0.6
	printableHeight = 8.27*72 - (marginTop+marginBottom)*72
)

// rowsPrint is a sheet of rows as printPlan reads it.
type rowsPrint struct {
	widths  []float64    // columns from A as far as its content (a chart too) reaches, in characters
	names   []string     // each column's header
	heights []float64    // rows from 1 as far as its content reaches, in points; enough to fill a page will do
	held    int          // data rows the sheet holds
	keep    map[int]bool // rows that must not end a page: a header, a table's title
	charts  [][2]int     // the first and last rows each chart spans
}

// printPlan is how many of the sheet's columns and rows its one page
// prints, at which scale. All of it prints when it fits one page at
// minPrintScale or larger; the page is then as large as fits.
func printPlan(r rowsPrint) (cols, rows int, scale uint) {
	cols = len(r.widths)
	width := 0.0
	for _, w := range r.widths {
		width += w
	}
	for cols > 1 {
		if _, across := printScale(width); !across {
			break
		}
		cols--
		width -= r.widths[cols]
	}
	scale, _ = printScale(width)
	height := 0.0
	for _, h := range r.heights {
		height += h
	}
	// 3 % to spare, as for the width.
	page := 0.97 * printableHeight
	if height*float64(scale)/100 <= page {
		return cols, len(r.heights), scale
	}
	if fit := uint(page / height * 100); fit >= minPrintScale {
		return cols, len(r.heights), fit
	}
	room, rows := page*100/float64(scale), 0
	for rows < len(r.heights) && room >= r.heights[rows] {
		room -= r.heights[rows]
		rows++
	}
	// Nor through a chart, nor on the row above one: LibreOffice prints
	// a chart the print area cuts, or one it ends just above, on a page
	// of its own.
	for moved := true; moved; {
		moved = false
		for rows > 2 && r.keep[rows] {
			rows--
		}
		for _, c := range r.charts {
			if c[0]-1 <= rows && rows < c[1] && c[0] > 3 {
				rows, moved = c[0]-2, true
			}
		}
	}
	return cols, max(rows, 1), scale
}

// printRows gives a sheet of rows its one page (printPlan): its print
// area, its header row repeated, and the page header's note when it
// prints less than it holds.
func (b *builder) printRows(sheet string, r rowsPrint) error {
	cols, rows, scale := printPlan(r)
	var note string
	cutRows, cutCols := rows < len(r.heights), cols < len(r.widths)
	if cutCols && cols > 0 && len(r.names) >= len(r.widths) {
		// Blank-headed columns (a chart's) are not named.
		last := len(r.widths) - 1
		for last > cols && r.names[last] == "" {
			last--
		}
		if r.names[cols] != "" {
			note = fmt.Sprintf("columns %s to %s", r.names[cols], r.names[last])
		}
	}
	switch {
	case cutRows && note != "":
		note = fmt.Sprintf("%s holds %s rows, all on screen, not on paper: this page prints the first %s, without %s.",
			sheet, thousands(r.held), thousands(max(rows-1, 0)), note)
	case cutRows:
		note = fmt.Sprintf("%s holds %s rows, all on screen, not on paper: this page prints the first %s.",
			sheet, thousands(r.held), thousands(max(rows-1, 0)))
	case note != "":
		note = fmt.Sprintf("%s: %s are on screen, not on paper.", sheet, note)
	}
	if err := b.pageSetup(sheet, scale, note); err != nil {
		return err
	}
	quoted := quoteSheet(sheet)
	if cutRows || cutCols {
		last, err := excelize.CoordinatesToCellName(cols, rows, true)
		if err != nil {
			return err
		}
		if err := b.f.SetDefinedName(&excelize.DefinedName{
			Name:     "_xlnm.Print_Area",
			RefersTo: quoted + "$A$1:" + last,
			Scope:    sheet,
		}); err != nil {
			return fmt.Errorf("print area of %s: %w", sheet, err)
		}
	}
	return b.printTitles(sheet, []string{quoted + "$1:$1"})
}

// printTable reads a built sheet of rows for printRows.
func (b *builder) printTable(sheet string) error {
	r := rowsPrint{held: b.printHeld[sheet], keep: map[int]bool{}}
	for _, k := range b.printKeep[sheet] {
		r.keep[k] = true
	}
	for reach := 0.0; reach < b.printWidths[sheet]-0.5; {
		name, err := excelize.ColumnNumberToName(len(r.widths) + 1)
		if err != nil {
			return err
		}
		w, err := b.f.GetColWidth(sheet, name)
		if err != nil {
			return err
		}
		header, err := b.f.GetCellValue(sheet, name+"1")
		if err != nil {
			return err
		}
		r.widths, r.names = append(r.widths, w), append(r.names, header)
		reach += w
	}
	rows, err := b.f.GetRows(sheet)
	if err != nil {
		return err
	}
	r.charts = b.printCharts[sheet]
	bottom := len(rows)
	for _, c := range r.charts {
		bottom = max(bottom, c[1])
	}
	for row := 1; row <= bottom; row++ {
		h, err := b.f.GetRowHeight(sheet, row)
		if err != nil {
			return err
		}
		r.heights = append(r.heights, h)
	}
	return b.printRows(sheet, r)
}

// printChart notes that a chart of sheet's spans chartRows rows from row.
func (b *builder) printChart(sheet string, row int) {
	if b.printCharts == nil {
		b.printCharts = map[string][][2]int{}
	}
	b.printCharts[sheet] = append(b.printCharts[sheet], [2]int{row, row + chartRows})
}

// chartRows is how many rows of the default height a chart spans.
const chartRows = int(chartHeight*0.75/15) + 1

// thousands writes n with a comma between thousands, as finance reads it.
func thousands(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0 && s[i-1] != '-'; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
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
		if !ok || s == "" || (c.style != b.st.header && c.style != b.st.wrap && c.style != b.st.sectionWrap && c.style != b.st.reason) {
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
		if c.style == b.st.reason {
			width -= reasonIndent
		}
		if c.style == b.st.sectionWrap {
			// 12 pt, bold.
			width /= 12.0 / 11
			perLine = lineHeight * 16 / 15
		}
		most = max(most, wrappedLines(s, width, c.style == b.st.header || c.style == b.st.sectionWrap))
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
