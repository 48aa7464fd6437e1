package reports_test

import (
	"archive/zip"
	"context"
	"fmt"
	"html"
	"io"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/xuri/excelize/v2"

	"github.com/tally-dev/tally/internal/testkit/printcheck"
	"github.com/tally-dev/tally/reports"
)

// A cost-centre owner's statement: each project's lines
// end with its subtotal per currency, the subtotals foot to the total per
// currency, which is the statement's "Direct: its own projects"; a bar
// chart of its months points at its months' rows. Printed with
// LibreOffice, the lines' header repeats on every page after its own, no
// word overprints another, and a shared cost's reason starts apart from
// its amount. Once the month is closed, the statement carries the close
// stamp: who closed it, when, why, the fingerprint and the final workbook.
func TestStatementReadsToItsOwner(t *testing.T) {
	tools, err := printcheck.Find()
	if err != nil {
		t.Fatal(err)
	}
	db := openDB(t)
	seed(t, db)
	manyRows(t, db)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	sts, err := reports.WriteStatements(ctx, db, period, t.TempDir(), reports.Options{Now: func() time.Time { return now }, Allocation: printAllocation(t)})
	if err != nil {
		t.Fatal(err)
	}
	var path string
	for _, st := range sts {
		if st.CostCentre == "Video production and encoding" {
			path = st.Path
		}
	}
	if path == "" {
		t.Fatalf("no statement of Video production and encoding: %+v", sts)
	}
	f, err := excelize.OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	all, err := f.GetRows("Statement", excelize.Options{RawCellValue: true})
	if err != nil {
		t.Fatal(err)
	}
	exact := func(s string) *big.Rat {
		r, ok := new(big.Rat).SetString(s)
		if !ok {
			t.Fatalf("%q is not a number", s)
		}
		return r
	}

	// Subtotals foot to the totals, per currency.
	direct, subtotals, totals := map[string]*big.Rat{}, map[string]*big.Rat{}, map[string]string{}
	header, lines := 0, 0
	for i, r := range all {
		switch {
		case len(r) >= 7 && r[0] == "Direct: its own projects":
			direct[r[2]] = exact(r[6])
		case len(r) >= 7 && strings.HasPrefix(r[0], "Subtotal "):
			if subtotals[r[2]] == nil {
				subtotals[r[2]] = new(big.Rat)
			}
			subtotals[r[2]].Add(subtotals[r[2]], exact(r[6]))
		case len(r) >= 7 && strings.HasPrefix(r[0], "Total ") && r[0] == "Total "+r[2]:
			totals[r[2]] = r[6]
		case len(r) > 0 && r[0] == "Project or rule":
			header = i + 1
		case header > 0 && len(r) >= 7 && r[4] != "" && !strings.HasPrefix(r[0], "Rounding"):
			lines++
		}
	}
	if len(direct) == 0 || len(direct) != len(subtotals) || len(direct) != len(totals) {
		t.Fatalf("direct %v, subtotals %v, totals %v", direct, subtotals, totals)
	}
	for c, d := range direct {
		if subtotals[c].Cmp(d) != 0 {
			t.Errorf("%s: the subtotals add up to %s, Direct is %s", c, subtotals[c].FloatString(12), d.FloatString(12))
		}
		if exact(totals[c]).Cmp(d) != 0 {
			t.Errorf("%s: Total %s, Direct %s", c, totals[c], d.FloatString(12))
		}
	}

	// The lines' header repeats on every page.
	var titles string
	for _, d := range f.GetDefinedName() {
		if d.Name == "_xlnm.Print_Titles" && d.Scope == "Statement" {
			titles = d.RefersTo
		}
	}
	if want := fmt.Sprintf("$%d:$%d", header, header); !strings.HasSuffix(titles, want) {
		t.Errorf("print titles %q, want the lines' header %s", titles, want)
	}

	// A chart per currency of the centre's months, pointing at its
	// months' rows: a block of "YYYY-MM" rows under a "Month" header.
	var blocks []string
	for i := 0; i < len(all); i++ {
		if len(all[i]) < 2 || all[i][0] != "Month" {
			continue
		}
		first, last := i+2, i+1
		for last < len(all) && len(all[last]) >= 2 && len(all[last][0]) == 7 && all[last][0][4] == '-' {
			last++
		}
		if last < first {
			t.Errorf("the months table at row %d has no month", i+1)
			continue
		}
		blocks = append(blocks, fmt.Sprintf("'Statement'!$A$%d:$A$%d", first, last), fmt.Sprintf("'Statement'!$B$%d:$B$%d", first, last))
	}
	charts := html.UnescapeString(strings.Join(chartXML(t, path), "\n"))
	if n := strings.Count(charts, `<barDir val="bar">`); n == 0 || n != len(blocks)/2 {
		t.Errorf("%d bar charts for %d months tables", n, len(blocks)/2)
	}
	for _, ref := range blocks {
		if !strings.Contains(charts, ref) {
			t.Errorf("no chart reads %s", ref)
		}
	}

	// On paper.
	pdf, err := tools.ToPDF(ctx, path, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	pages, err := tools.Pages(ctx, pdf)
	if err != nil {
		t.Fatal(err)
	}
	printcheck.Legible(t, path, pages)
	if len(pages) < 2 {
		t.Fatalf("the statement prints on %d page, the test wants it longer", len(pages))
	}
	seen := false
	for _, p := range pages {
		text := p.Text()
		if !seen {
			seen = strings.Contains(text, "Project or rule")
			continue
		}
		on := map[string]bool{}
		for _, w := range p.Words {
			on[w.Text] = true
		}
		for _, w := range strings.Fields("Project or rule Meter or origin Currency Paid as Method Ratio Amount Why") {
			if !on[w] {
				t.Errorf("page %d does not repeat the lines' header's %q: %.300s", p.Number, w, text)
			}
		}
	}
	if !seen {
		t.Error("no page prints the lines' header")
	}
	reasonApart(t, pages)

	// Closed, the month's statement carries the close stamp. (The close
	// froze no chargeback, so it charges the centre nothing.)
	execSQL(t, db, `INSERT INTO month_closes (id, month, basis, granularity, action, acted_at, who, reason, rows, cost, content_hash, final_workbook)
		VALUES (uuid(), DATE '2026-10-01', 'usage', 'day', 'close', TIMESTAMP '2026-11-03 09:15:00', 'controller', 'October signed off',
		        1, MAP {'USD': 1.0::DECIMAL(38, 12)}, 'abc123', 'tally-cost-2026-10-final.xlsx')`)
	sts, err = reports.WriteStatements(ctx, db, period, t.TempDir(), reports.Options{Now: func() time.Time { return now }, Allocation: printAllocation(t)})
	if err != nil {
		t.Fatal(err)
	}
	g, err := excelize.OpenFile(sts[0].Path)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	closed, err := g.GetRows("Statement")
	if err != nil {
		t.Fatal(err)
	}
	stamp := map[string]string{}
	for _, r := range closed {
		if len(r) >= 2 {
			stamp[r[0]] = r[1]
		}
	}
	for label, want := range map[string]string{"Closed by": "controller", "Close reason": "October signed off",
		"Close fingerprint: content hash": "abc123", "Final workbook (current)": "tally-cost-2026-10-final.xlsx"} {
		if stamp[label] != want {
			t.Errorf("the closed month's statement's %s %q, want %q", label, stamp[label], want)
		}
	}
}

// reasonApart fails t where a shared line's reason, in the Why column,
// starts within 3 points of its amount's last word, or over it: read as
// "5.38 USD rule shared-test…".
func reasonApart(t *testing.T, pages []printcheck.Page) {
	t.Helper()
	checked := 0
	for _, p := range pages {
		var amountX, whyX float64 = -1, -1
		for _, w := range p.Words {
			switch {
			case w.Text == "Amount" && amountX < 0:
				amountX = w.XMin
			case w.Text == "Why" && whyX < 0:
				whyX = w.XMin
			}
		}
		if amountX < 0 || whyX < 0 {
			continue
		}
		for _, a := range p.Words {
			if a.XMax > whyX+1 || a.XMax < amountX {
				continue // not in the Amount column
			}
			for _, w := range p.Words {
				if w.XMin < whyX-3 || w.YMax <= a.YMin || w.YMin >= a.YMax {
					continue // not a word of the Why column on the amount's line
				}
				checked++
				if w.XMin-a.XMax < 3 {
					t.Errorf("page %d: the reason %q starts %.1f points after the amount's %q", p.Number, w.Text, w.XMin-a.XMax, a.Text)
				}
			}
		}
	}
	if checked == 0 {
		t.Error("no reason beside an amount was printed: the check checks nothing")
	}
}

// chartXML is the XML of every chart in the workbook at path.
func chartXML(t *testing.T, path string) []string {
	t.Helper()
	z, err := zip.OpenReader(path)
	if err != nil {
		t.Fatal(err)
	}
	defer z.Close()
	var out []string
	for _, f := range z.File {
		if !strings.HasPrefix(f.Name, "xl/charts/chart") {
			continue
		}
		r, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(r)
		r.Close()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, string(b))
	}
	return out
}
