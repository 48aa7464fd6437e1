package reports

import (
	"strings"
	"testing"

	"github.com/xuri/excelize/v2"
)

// A cell or sentence longer than Excel's tallest row (a payment method's
// hundreds of projects) gets the tallest row, 409 points, instead of
// failing the workbook; a short one keeps the height its lines need.
func TestRowHeightStopsAtExcelsMost(t *testing.T) {
	f := excelize.NewFile()
	defer f.Close()
	st, err := newStyles(f)
	if err != nil {
		t.Fatal(err)
	}
	b := &builder{f: f, st: st}
	const sheet = "Sheet1"
	if err := f.SetColWidth(sheet, "A", "C", 20); err != nil {
		t.Fatal(err)
	}
	long := strings.TrimSpace(strings.Repeat("project-with-a-long-name ", 400))
	if err := b.fitRowHeight(sheet, 1, []cell{{long, b.st.wrap}}); err != nil {
		t.Fatalf("a cell of %d characters: %v", len(long), err)
	}
	if err := b.fitRowHeight(sheet, 2, []cell{{"two words per line, three lines here at most", b.st.wrap}}); err != nil {
		t.Fatal(err)
	}
	if err := b.wrapAcross(sheet, 3, 3, long); err != nil {
		t.Fatalf("a sentence of %d characters: %v", len(long), err)
	}
	for row, want := range map[int]float64{1: excelize.MaxRowHeight, 3: excelize.MaxRowHeight} {
		if h, err := f.GetRowHeight(sheet, row); err != nil || h != want {
			t.Errorf("row %d: height %v, %v; want %v", row, h, err, want)
		}
	}
	if h, err := f.GetRowHeight(sheet, 2); err != nil || h <= 0 || h >= excelize.MaxRowHeight {
		t.Errorf("row 2: height %v, %v; want its few lines' height", h, err)
	}
}

// A sheet of rows prints one page: all of it when it fits at 66 % or
// more, else its leftmost columns as far as fit the width at 66 % and its
// top rows as far as fit the page, never ending on a header.
func TestPrintPlanPrintsOnePage(t *testing.T) {
	small := rowsPrint{widths: []float64{28, 10, 10, 16, 16}, heights: []float64{30, 15, 15, 15}}
	if cols, rows, scale := printPlan(small); cols != 5 || rows != 4 || scale != maxPrintScale {
		t.Errorf("a small sheet: %d columns, %d rows at %d %%; want all at 100 %%", cols, rows, scale)
	}
	// 40 rows print whole, a little smaller than 100 %.
	tall := rowsPrint{widths: []float64{28, 10}, heights: make([]float64, 40)}
	for i := range tall.heights {
		tall.heights[i] = 15
	}
	if cols, rows, scale := printPlan(tall); cols != 2 || rows != 40 || scale < minPrintScale || scale >= maxPrintScale {
		t.Errorf("40 rows: %d columns, %d rows at %d %%; want all at less than 100 %%", cols, rows, scale)
	}
	detail := rowsPrint{keep: map[int]bool{}}
	for _, c := range detailColumns {
		detail.widths = append(detail.widths, c.width)
	}
	for range 1000 {
		detail.heights = append(detail.heights, 15)
	}
	cols, rows, scale := printPlan(detail)
	width := columnsWidth(detailColumns[:cols])
	// As many columns as fit at 66 %, the usage value among them, and
	// the page as large as they allow.
	if cols < 2 || cols >= len(detailColumns) || scale < minPrintScale || width*pointsPerChar*float64(scale)/100 > printableWidth {
		t.Errorf("Detail: %d columns (%v characters) at %d %%", cols, width, scale)
	}
	if _, across := printScale(width + detailColumns[cols].width); !across || cols <= detailAmount {
		t.Errorf("Detail: %d columns, the next would fit too, or the usage value (column %d) is not among them", cols, detailAmount+1)
	}
	if float64(rows)*15*float64(scale)/100 > printableHeight || float64(rows+3)*15*float64(scale)/100 < printableHeight {
		t.Errorf("Detail: %d rows at %d %% do not fill the page", rows, scale)
	}
	detail.keep[rows], detail.keep[rows-1] = true, true
	if _, r, _ := printPlan(detail); r != rows-2 {
		t.Errorf("a page ending on a table's title and header ends at row %d, want %d", r, rows-2)
	}
	for n, want := range map[int]string{0: "0", 999: "999", 1000: "1,000", 1234567: "1,234,567"} {
		if got := thousands(n); got != want {
			t.Errorf("thousands(%d) = %q, want %q", n, got, want)
		}
	}
}
