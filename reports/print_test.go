package reports_test

import (
	"context"
	"database/sql"
	"fmt"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/xuri/excelize/v2"

	"github.com/tally-dev/tally"
	"github.com/tally-dev/tally/configs"
	"github.com/tally-dev/tally/internal/testkit/printcheck"
	"github.com/tally-dev/tally/reports"
)

// A month of 1,000+ Detail rows, with every kind of flag the fixture has,
// long texts, budgets with their charts, two currencies and an adjustment
// to a closed month prints legibly
// (printcheck.Legible): LibreOffice prints it to PDF, and no word overprints
// another, none is under 7 pt, and every sheet's header is on its first
// pages. It prints as a binder (binder): a page or so a sheet. The demo workbook's proof is TestWorkbookPrintsAsPDF in
// cmd/tally.
func TestWorkbookPrintsLegibly(t *testing.T) {
	tools, err := printcheck.Find()
	if err != nil {
		t.Fatal(err)
	}
	db := openDB(t)
	seed(t, db)
	manyRows(t, db)
	// September was closed at 90 USD; a late charge made it 100 since:
	// the Adjustments to closed months sheet prints too.
	execSQL(t, db, `INSERT INTO month_closes (id, month, basis, granularity, action, acted_at, who, rows, cost, content_hash, final_workbook)
		VALUES (uuid(), DATE '2026-09-01', 'usage', 'day', 'close', TIMESTAMP '2026-10-02 06:00:00', 'nightly',
		        1, MAP {'USD': 90.0::DECIMAL(38, 12)}, 'x', 'tally-cost-2026-09-final.xlsx')`)
	execSQL(t, db, `INSERT INTO month_close_figures (close_id, project, meter_name, payment_method, currency, rows, cost, billed, effective, quantity, unit) SELECT id, 'alpha', 'video_encoding_ondemand', ?, 'USD', 1, 90, 90, 90, 1, 'minutes'
		FROM month_closes`, pm1)
	budgets := []reports.Budget{
		{Name: "video", ScopeKind: "all", ScopeText: "all", Currency: "USD", Amount: tally.MustDecimal("500")},
		{Name: "alpha", ScopeKind: "project", Scope: "alpha", ScopeText: "project:alpha", Currency: "EUR", Amount: tally.MustDecimal("20")},
	}
	f, path := build(t, db, reports.Options{Budgets: budgets, Allocation: printAllocation(t)})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	// A cost centre's statement prints legibly too; LibreOffice prints it
	// with the workbook, in one run.
	sts, err := reports.WriteStatements(ctx, db, period, t.TempDir(), reports.Options{Now: func() time.Time { return now }, Allocation: printAllocation(t)})
	if err != nil {
		t.Fatal(err)
	}
	if len(sts) != 2 {
		t.Fatalf("statements %+v", sts)
	}
	pdfs, err := tools.ToPDFs(ctx, t.TempDir(), path, sts[1].Path)
	if err != nil {
		t.Fatal(err)
	}
	pages, err := tools.Pages(ctx, pdfs[0])
	if err != nil {
		t.Fatal(err)
	}
	by := printcheck.BySheet(pages)
	for _, sheet := range []string{"Adjustments to closed months", "Chargeback", "Chargeback lines"} {
		if len(by[sheet]) == 0 {
			t.Errorf("the %s sheet did not print: sheets %v", sheet, f.GetSheetList())
		}
	}
	printcheck.Legible(t, path, pages)
	binder(t, f, path, pages)
	amountsOnPaper(t, f, path, by)

	if pages, err = tools.Pages(ctx, pdfs[1]); err != nil {
		t.Fatal(err)
	}
	printcheck.Legible(t, sts[1].Path, pages)
}

// printAllocation charges the print fixture back to two cost centres with
// long names, a shared project split proportionally and a driver nobody
// uses (its fallback note is the longest text the sheet wraps).
func printAllocation(t *testing.T) *tally.Allocation {
	oct := time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC)
	return &tally.Allocation{
		CostCentres: []tally.CostCentre{
			{Name: "Video production and encoding", Owner: "video@example.com", Projects: []string{"alpha", "project-1", "project-2", "project-3"}},
			{Name: "Storage, archive and platform", Projects: []string{"beta", "project-5", "project-6"}},
		},
		Rules: []tally.AllocationRule{
			{Name: "shared platform", From: oct, Projects: []string{"project-0", "project-4"}, Receivers: []string{"Video production and encoding", "Storage, archive and platform"}, Method: tally.AllocateProportional},
			{Name: "gamma by storage", From: oct, Projects: []string{"gamma", "=1+1"}, Receivers: []string{"Video production and encoding", "Storage, archive and platform"}, Method: tally.AllocateDriver, Driver: "transcode_minutes_that_nobody_uses"},
		},
	}
}

// binder checks the printed workbook is a binder, not the month's rows:
// at most 15 pages; every sheet but the Summary on one page;
// Detail's page says how many rows the sheet holds and that they are on
// screen, not on paper, under the header of the columns that name a row;
// and a sheet that takes more than one page repeats its header on each.
func binder(t *testing.T, f *excelize.File, path string, pages []printcheck.Page) {
	t.Helper()
	by := printcheck.BySheet(pages)
	if len(pages) > 15 {
		var per []string
		for _, sheet := range f.GetSheetList() {
			per = append(per, fmt.Sprintf("%s %d", sheet, len(by[sheet])))
		}
		t.Errorf("the workbook prints on %d pages, want 15 at most: %s", len(pages), strings.Join(per, ", "))
	}
	for _, sheet := range f.GetSheetList() {
		if n := len(by[sheet]); n != 1 && sheet != "Summary" {
			t.Errorf("%s prints on %d pages, want 1: %.300s", sheet, n, by[sheet][1].Text())
		}
	}
	detail, err := f.GetRows("Detail")
	if err != nil {
		t.Fatal(err)
	}
	held := len(detail) - 1
	if held < 1000 {
		t.Fatalf("Detail holds %d rows: the test prints too few", held)
	}
	if len(by["Detail"]) != 1 {
		return
	}
	page := by["Detail"][0].Text()
	want := fmt.Sprintf("Detail holds %d,%03d rows, all on screen, not on paper: this page prints the first", held/1000, held%1000)
	if !strings.Contains(page, want) {
		t.Errorf("Detail's page does not say %q:\n%.600s", want, page)
	}
	cols, rows := printcheck.PrintArea(t, path, "Detail")
	if rows > 60 || cols > len(detail[0]) {
		t.Errorf("Detail's print area is %d columns by %d rows", cols, rows)
	}
	for _, h := range []string{"Date", "Project", "Meter"} {
		if !strings.Contains(page, h) {
			t.Errorf("Detail's page lacks the header %q:\n%.600s", h, page)
		}
	}
	for sheet, printed := range by {
		if len(printed) < 2 || sheet == "Summary" {
			continue
		}
		header, err := f.GetRows(sheet)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range printed {
			if !strings.Contains(p.Text(), header[0][0]) {
				t.Errorf("page %d of %s does not repeat its header %q", p.Number, sheet, header[0][0])
			}
		}
	}
}

// amountsOnPaper checks that the wide sheets print their amounts: each
// prints one page wide, and every page of it carries the header of each
// amount column and, under it, the figures of the rows its print area
// holds, as the cells show them. A sheet wider than the page used to
// print its leftmost columns only, the names without the figures.
func amountsOnPaper(t *testing.T, f *excelize.File, path string, by map[string][]printcheck.Page) {
	t.Helper()
	for sheet, heads := range map[string][]string{
		"By payment method":            {"Usage value"},
		"Rate card check":              {"Usage value", "Invoiced", "Expected cost", "Variance"},
		"Flags":                        {"Amount"},
		"Adjustments to closed months": {"As closed", "Today", "Adjustment"},
		"By project":                   {"Total usage value"},
		"Chargeback":                   {"Direct", "Shared received", "Total"},
		"Detail":                       {"Usage value"},
	} {
		printed := by[sheet]
		if len(printed) == 0 {
			t.Errorf("%s is not printed", sheet)
			continue
		}
		if across := printcheck.FirstBand(printed); len(across) > 1 {
			t.Errorf("%s prints %d pages wide, want one", sheet, len(across))
		}
		rows, err := f.GetRows(sheet)
		if err != nil {
			t.Fatal(err)
		}
		_, last := printcheck.PrintArea(t, path, sheet)
		for _, head := range heads {
			col := -1
			for i, h := range rows[0] {
				if h == head {
					col = i
				}
			}
			if col < 0 {
				t.Fatalf("%s has no column %q: %q", sheet, head, rows[0])
			}
			var figures []string
			for r := 1; r < min(len(rows), last); r++ {
				ref, err := excelize.CoordinatesToCellName(col+1, r+1)
				if err != nil {
					t.Fatal(err)
				}
				if typ, _ := f.GetCellType(sheet, ref); typ != excelize.CellTypeNumber && typ != excelize.CellTypeUnset {
					continue // "not priced", or a blank
				}
				if v, err := f.GetCellValue(sheet, ref, excelize.Options{RawCellValue: true}); err == nil && v != "" {
					figures = append(figures, shownCents(t, v))
				}
			}
			if len(figures) == 0 {
				t.Errorf("%s prints no figure of %q: the test checks nothing", sheet, head)
			}
			for _, p := range printed {
				words := map[string]int{}
				for _, w := range p.Words {
					words[w.Text]++
				}
				for _, w := range strings.Fields(head) {
					if words[w] == 0 {
						t.Errorf("page %d (%s) lacks the amount column's header %q", p.Number, sheet, head)
					}
				}
				for _, fig := range figures {
					if words[fig] == 0 {
						t.Errorf("page %d (%s) lacks the figure %s of column %q: %.300s", p.Number, sheet, fig, head, p.Text())
						break
					}
				}
			}
		}
	}
}

// shownCents is an amount as the workbook shows a currency of two
// decimals: rounded half away from zero, thousands separated. (Excelize's
// own formatting rounds the cell's binary float, a cent off LibreOffice's
// on a half cent.)
func shownCents(t *testing.T, raw string) string {
	t.Helper()
	r, ok := new(big.Rat).SetString(raw)
	if !ok {
		t.Fatalf("amount %q is not a number", raw)
	}
	neg := r.Sign() < 0
	r.Abs(r)
	cents := new(big.Int).Quo(new(big.Rat).Add(new(big.Rat).Mul(r, big.NewRat(100, 1)), big.NewRat(1, 2)).Num(),
		new(big.Rat).Add(new(big.Rat).Mul(r, big.NewRat(100, 1)), big.NewRat(1, 2)).Denom())
	s := fmt.Sprintf("%03d", cents)
	whole, frac := s[:len(s)-2], s[len(s)-2:]
	for i := len(whole) - 3; i > 0; i -= 3 {
		whole = whole[:i] + "," + whole[i:]
	}
	if neg && cents.Sign() != 0 {
		whole = "-" + whole
	}
	return whole + "." + frac
}

// manyRows adds 1,240 day rows to the seed: 40 a day over the month's 31
// days, over nine projects, five meters and two currencies, so that Detail
// and a cost centre's statement run past a page.
func manyRows(t *testing.T, db *sql.DB) {
	t.Helper()
	execSQL(t, db, `INSERT INTO usage (granularity, basis, date, date_processed, meter_name, meter_sku, family, solution, unit, quantity, price, cost, currency, entitlement, entitlement_type, payment_method, payment_method_name, project, run_id, fetched_at)
SELECT 'day', 'usage', DATE '2026-10-01' + (i // 40)::INTEGER, DATE '2026-10-02' + (i // 40)::INTEGER,
       'meter_' || (i % 5), 'SKU-' || (i % 5), 'video', 'encoding', 'minutes',
       10 + i % 7, 0.015, (0.015 * (10 + i % 7))::DECIMAL(38, 12), CASE WHEN i % 3 = 0 THEN 'EUR' ELSE 'USD' END,
       NULL, NULL, ?, 'Direct USD', 'project-' || (i % 9), CAST(? AS UUID), ?
FROM range(1240) t(i)`, pm1, runID, now.Add(-48*time.Hour))
}

// The sheets and blocks that config adds print legibly too: the
// Commitments sheet (one page, one page wide, its amounts on paper) and the
// totals converted into a reporting currency on the Summary and By
// project, whose total is on paper.
func TestCommitmentsAndConvertedTotalsPrint(t *testing.T) {
	tools, err := printcheck.Find()
	if err != nil {
		t.Fatal(err)
	}
	db := openDB(t)
	seed(t, db)
	terms := commitmentsFixture(t, db)
	rate := tally.MustDecimal("0.9215")
	f, path := build(t, db, reports.Options{Commitments: terms, ReportingCurrency: "EUR",
		FXRates: map[string]map[string]configs.FXRate{"2026-10": {"USD": {Rate: rate, Source: "reports.fx_rates"}}}})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	pdfs, err := tools.ToPDFs(ctx, t.TempDir(), path)
	if err != nil {
		t.Fatal(err)
	}
	pages, err := tools.Pages(ctx, pdfs[0])
	if err != nil {
		t.Fatal(err)
	}
	printcheck.Legible(t, path, pages)
	by := printcheck.BySheet(pages)
	if n := len(by["Commitments"]); n != 1 {
		t.Fatalf("Commitments prints on %d pages, want 1", n)
	}
	if across := printcheck.FirstBand(by["Commitments"]); len(across) > 1 {
		t.Errorf("Commitments prints %d pages wide, want one", len(across))
	}
	page := by["Commitments"][0].Text()
	// The pool's figures as the sheet shows them: committed, drawn this
	// month and to date, remaining; and the name that tells the rows apart.
	// The pool runs out on 2026-12-30 at October's pace: the day the sheet
	// is for is on paper.
	for _, want := range []string{"Encoding pool 2026", "entitlement ent-min", "Committed", "Drawn this month", "Drawn to date", "Remaining",
		"1,000.00", "310.00", "400.00", "600.00", "Runs out at the month's pace", "2026-12-30", "lasts past its end"} {
		if !strings.Contains(page, want) {
			t.Errorf("the Commitments page lacks %q:\n%.800s", want, page)
		}
	}
	for _, sheet := range []string{"Summary", "By project"} {
		var text strings.Builder
		for _, p := range by[sheet] {
			text.WriteString(p.Text())
		}
		if !strings.Contains(text.String(), "Total in EUR") || !strings.Contains(text.String(), "reports.fx_rates") {
			t.Errorf("%s's pages lack the converted total and its rate's source:\n%.1200s", sheet, text.String())
		}
	}
	if _, err := f.GetSheetIndex("Commitments"); err != nil {
		t.Fatal(err)
	}
}
