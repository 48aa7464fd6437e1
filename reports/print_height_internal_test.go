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
