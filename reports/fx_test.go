package reports_test

import (
	"math/big"
	"strconv"
	"testing"

	"github.com/tally-dev/tally"
	"github.com/tally-dev/tally/configs"
	"github.com/tally-dev/tally/reports"
)

// With a reporting currency the Summary and By project add the month's
// total converted into it, each currency at the month's rate with its
// source, beside the figures per currency; a currency without a rate for
// the month says so, and no total is made from the others.
func TestReportingCurrency(t *testing.T) {
	db := openDB(t)
	seed(t, db)
	sums := map[string]*big.Rat{}
	for _, r := range querySQL(t, db, `SELECT currency, CAST(sum(cost) AS VARCHAR) FROM usage WHERE `+monthFilter+` GROUP BY ALL`) {
		sums[r[0]] = tally.MustDecimal(r[1]).Rat()
	}
	rate := tally.MustDecimal("0.921500000001")
	want := new(big.Rat).Add(sums["EUR"], new(big.Rat).Mul(sums["USD"], rate.Rat()))
	wantF, _ := want.Float64()

	converted := func(rowsOf [][]string) map[string][]string {
		out := map[string][]string{}
		in := false
		for _, r := range rowsOf {
			if at(r, 0) == "Currency" && at(r, 4) == "Rate source" {
				in = true
				continue
			}
			if in && at(r, 0) != "" {
				out[at(r, 0)] = r
			}
			if in && at(r, 0) == "Total in EUR" {
				break
			}
		}
		return out
	}
	f, _ := build(t, db, reports.Options{ReportingCurrency: "EUR",
		FXRates: map[string]map[string]configs.FXRate{"2026-10": {"USD": {Rate: rate, Source: "reports.fx_rates"}}}})
	for _, sheet := range []string{"Summary", "By project"} {
		got := converted(rows(t, f, sheet))
		if len(got) != 3 {
			t.Fatalf("%s: converted rows %q, want EUR, USD and the total", sheet, got)
		}
		if r := got["USD"]; at(r, 4) != "reports.fx_rates" || at(r, 2) != strconv.FormatFloat(rate.Float64(), 'g', -1, 64) {
			t.Errorf("%s: USD %q", sheet, r)
		}
		usd, _ := new(big.Rat).Mul(sums["USD"], rate.Rat()).Float64()
		if v := mustFloat(t, at(got["USD"], 3)); v != usd {
			t.Errorf("%s: USD in EUR %v, want %v", sheet, v, usd)
		}
		if r := got["EUR"]; at(r, 4) != "the reporting currency" || at(r, 2) != "1" {
			t.Errorf("%s: EUR %q", sheet, r)
		}
		if v := mustFloat(t, at(got["Total in EUR"], 3)); v != wantF {
			t.Errorf("%s: total in EUR %v, want %v (%s)", sheet, v, wantF, want.FloatString(12))
		}
	}
	// The per-currency figures stay as they were.
	sameAmount(t, "Summary USD", at(one(t, summaryTable(t, f, "Currency"), map[string]string{"Currency": "USD"}), 6), querySQL(t, db,
		`SELECT CAST(sum(cost) AS VARCHAR) FROM usage WHERE `+monthFilter+` AND currency = 'USD'`)[0][0])

	// No rate for USD in October: said, never guessed, and no total.
	f, _ = build(t, db, reports.Options{ReportingCurrency: "EUR",
		FXRates: map[string]map[string]configs.FXRate{"2026-09": {"USD": {Rate: rate, Source: "reports.fx_rates"}}}})
	for _, sheet := range []string{"Summary", "By project"} {
		got := converted(rows(t, f, sheet))
		if at(got["USD"], 3) != "no rate for USD in 2026-10" || at(got["Total in EUR"], 3) != "no total: no rate for USD in 2026-10" {
			t.Errorf("%s without a rate: %q", sheet, got)
		}
	}
	// No reporting currency: nothing converted.
	f, _ = build(t, db, reports.Options{})
	for _, sheet := range []string{"Summary", "By project"} {
		if got := converted(rows(t, f, sheet)); len(got) != 0 {
			t.Errorf("%s without a reporting currency: %q", sheet, got)
		}
	}
}
