package reports_test

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/xuri/excelize/v2"

	"github.com/tally-dev/tally"
	"github.com/tally-dev/tally/internal/testkit/prooftest"
	"github.com/tally-dev/tally/internal/testkit/runtest"
	"github.com/tally-dev/tally/reports"
)

// TestNightlyOneRunID runs `tally run` through faults: fetch and reports
// share one run id, recorded once; the previous month's workbook shows that
// run and totals per currency equal to the database's and the sim's.
func TestNightlyOneRunID(t *testing.T) {
	h := runtest.NewHarness(t, runtest.Setup{
		Granularity: tally.Day, Start: "2025-02-01", Now: "2025-03-04T09:00:00Z",
		Faults: runtest.Faults(51), Months: []string{"previous", "current"},
	})
	sum, err := runtest.RunNightly(context.Background(), h.Runner, nil)
	if err != nil {
		t.Fatalf("nightly: %v", err)
	}
	if sum.Fetch.Loaded == 0 || sum.Fetch.Loaded != sum.Fetch.Planned || sum.Fetch.Published == "" {
		t.Fatalf("fetch summary %+v", sum.Fetch)
	}
	feb, mar := prooftest.Day(t, "2025-02-01"), prooftest.Day(t, "2025-03-01")
	var months []time.Time
	for _, r := range sum.Reports {
		months = append(months, r.Month)
		if _, err := os.Stat(r.Path); err != nil {
			t.Errorf("workbook of %s: %v", r.Month.Format("2006-01"), err)
		}
	}
	if !slices.EqualFunc(months, []time.Time{feb, mar}, time.Time.Equal) {
		t.Fatalf("reports for %v, want February and March", months)
	}
	wantPath := filepath.Join(h.Dir, "reports", "2025-02", "tally-cost-2025-02.xlsx")
	if sum.Reports[0].Path != wantPath {
		t.Errorf("previous month's workbook at %s, want %s", sum.Reports[0].Path, wantPath)
	}
	run := sum.RunID.String()

	var dbTotals map[string]tally.Decimal
	prooftest.WithDB(t, h.DB, func(db *sql.DB) {
		var n int
		var id, status string
		if err := db.QueryRow(`SELECT count(*), any_value(id::VARCHAR), any_value(status) FROM runs`).Scan(&n, &id, &status); err != nil {
			t.Fatal(err)
		}
		if n != 1 || id != run || status != "ok" {
			t.Errorf("runs: %d rows, id %s (want %s), status %s", n, id, run, status)
		}
		for _, table := range []string{"usage", "fetch_windows", "payment_method_snapshots", "rate_card_price_snapshots", "project_snapshots"} {
			var ids []string
			rows, err := db.Query(`SELECT DISTINCT run_id::VARCHAR FROM ` + table)
			if err != nil {
				t.Fatal(err)
			}
			for rows.Next() {
				var s string
				if err := rows.Scan(&s); err != nil {
					t.Fatal(err)
				}
				ids = append(ids, s)
			}
			rows.Close()
			if len(ids) != 1 || ids[0] != run {
				t.Errorf("%s carries run ids %q, want only %s", table, ids, run)
			}
		}
		dbTotals, _ = prooftest.Totals(t, db, tally.Day, "usage", feb, mar)
	})
	h.WantExact(h.DB, "February", h.Query(feb, mar))
	if len(dbTotals) < 2 {
		t.Fatalf("February has totals in %d currencies; the test wants two", len(dbTotals))
	}

	f, err := excelize.OpenFile(sum.Reports[0].Path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	summary, err := f.GetRows("Summary", excelize.Options{RawCellValue: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := prooftest.Labelled(summary, "Last run id"); got != run {
		t.Errorf("Summary's last run id is %q, want %s", got, run)
	}
	// The totals table: a "Currency" header, then one row per currency.
	start := slices.IndexFunc(summary, func(r []string) bool { return len(r) > 0 && r[0] == "Currency" })
	if start < 0 {
		t.Fatal("Summary has no totals table")
	}
	header := summary[start]
	col := slices.Index(header, "Total usage value")
	if col < 0 {
		t.Fatalf("totals header %q has no Total usage value", header)
	}
	seen := map[string]bool{}
	for _, r := range summary[start+1:] {
		if len(r) <= col || r[0] == "" {
			break
		}
		want, ok := dbTotals[r[0]]
		if !ok {
			t.Errorf("Summary lists currency %s, which the database has not", r[0])
			continue
		}
		got, err := strconv.ParseFloat(r[col], 64)
		if err != nil {
			t.Fatalf("total %q of %s: %v", r[col], r[0], err)
		}
		if got != want.Float64() {
			t.Errorf("Summary total of %s is %s, the database's sum %s", r[0], r[col], want)
		}
		seen[r[0]] = true
	}
	if len(seen) != len(dbTotals) {
		t.Errorf("Summary lists %v, the database has %d currencies", seen, len(dbTotals))
	}
	if p := reports.DefaultPath(h.Runner.Config.Reports.Dir, mar); sum.Reports[1].Path != p {
		t.Errorf("current month's workbook at %s, want %s", sum.Reports[1].Path, p)
	}
}
