package reports_test

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tally-dev/tally"
	"github.com/tally-dev/tally/reports"
)

// A month's workbook from an analysts' copy an older Tally published,
// without the chargeback tables: written as before when no cost centre is
// configured; with cost centres, refused, saying to publish it again.
func TestChargebackOnAnOlderCopy(t *testing.T) {
	db := openDB(t)
	seed(t, db)
	execSQL(t, db, `DROP TABLE allocation_rules`)
	execSQL(t, db, `DROP TABLE allocation_cost_centres`)
	budgets := []reports.Budget{{Name: "video", ScopeKind: "all", ScopeText: "all", Currency: "USD", Amount: tally.MustDecimal("500")}}
	f, _ := build(t, db, reports.Options{Allocation: &tally.Allocation{}, Budgets: budgets})
	if sheets := f.GetSheetList(); slices.Contains(sheets, "Chargeback") || !slices.Contains(sheets, "Budgets and forecast") {
		t.Errorf("sheets %v: a Chargeback sheet without cost centres, or no budgets", sheets)
	}
	a := &tally.Allocation{CostCentres: []tally.CostCentre{{Name: "Video", Projects: []string{"alpha"}}}}
	err := reports.WriteFile(context.Background(), db, period, filepath.Join(t.TempDir(), "x.xlsx"), reports.Options{Allocation: a, Now: func() time.Time { return now }})
	if err == nil || !strings.Contains(err.Error(), "published by a Tally without chargeback: run tally fetch") {
		t.Fatalf("err %v", err)
	}
}

// With cost centres, the workbook's Chargeback sheet splits the month:
// alpha is Video's, beta shared evenly with Storage, the rest Unallocated;
// per currency the sheet adds up to the Summary's total.
func TestChargebackSheet(t *testing.T) {
	db := openDB(t)
	seed(t, db)
	oct := time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC)
	a := &tally.Allocation{
		CostCentres: []tally.CostCentre{{Name: "Video", Projects: []string{"alpha"}}, {Name: "Storage"}},
		Rules:       []tally.AllocationRule{{Name: "beta", From: oct, Projects: []string{"beta"}, Receivers: []string{"Video", "Storage"}, Method: tally.AllocateEven}},
	}
	f, _ := build(t, db, reports.Options{Allocation: a})
	got := map[string][]string{}
	for _, r := range rows(t, f, "Chargeback")[1:] {
		if len(r) < 5 || r[0] == "" {
			break
		}
		got[r[0]+" "+r[1]] = r[2:5]
	}
	// alpha: 16 × 1.50 + 0.15 (the 10th) USD, 6 × 1.30 EUR; beta: 0.73 +
	// 0.50 USD and 0.12 + 1.00 EUR (evenly: 0.615 and 0.56 each).
	want := map[string][]string{
		"Storage EUR": {"0", "0.56", "0.56"},
		"Storage USD": {"0", "0.615", "0.615"},
		"Video EUR":   {"7.8", "0.56", "8.36"},
		"Video USD":   {"24.15", "0.615", "24.765"},
	}
	for k, w := range want {
		if g := got[k]; !slices.Equal(g, w) {
			t.Errorf("%s: direct, shared, total %v, want %v", k, g, w)
		}
	}
	if _, ok := got["Unallocated USD"]; !ok {
		t.Errorf("no Unallocated USD: %v", got)
	}
	for _, r := range rows(t, f, "Chargeback") {
		if len(r) > 4 && r[0] == "Difference" && r[4] != "0" {
			t.Errorf("tie-out %v", r)
		}
	}
	lines := rows(t, f, "Chargeback lines")
	if len(lines) != 9 { // header, 2 receivers × (USD beta charges: storage_gb balance, transcode_x direct; EUR: live license, storage_gb direct)
		t.Errorf("Chargeback lines: %d rows: %v", len(lines), lines)
	}
}
