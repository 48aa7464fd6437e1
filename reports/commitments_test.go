package reports_test

import (
	"database/sql"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/xuri/excelize/v2"

	"github.com/tally-dev/tally"
	"github.com/tally-dev/tally/reports"
)

// The Commitments sheet: per commitment of the config, what was committed,
// what the entitlement's rows drew this month and to date (sums taken
// from the rows here), what remains and the day it runs out at the month's
// pace. The spend pool drew 90 USD in September and 10 USD on each of
// October's 31 days: 400 to date, 600 left at 10 a day runs out on
// December 30, before its end on December 31: flagged, and counted on the
// Summary. Its EUR row is not added (another currency), nor its row from
// before its start. The usage commitment's 500 minutes last past its end.
// Spend commitments total per currency.
func TestCommitmentsSheet(t *testing.T) {
	db := openDB(t)
	seed(t, db)
	terms := commitmentsFixture(t, db)
	f, _ := build(t, db, reports.Options{Commitments: terms})

	sheets := f.GetSheetList()
	if i := slices.Index(sheets, "Commitments"); i < 0 || sheets[i-1] != "Rate card check" || sheets[i+1] != "Flags" {
		t.Fatalf("sheets %q: want Commitments between Rate card check and Flags", sheets)
	}
	data := dataRows(t, f, "Commitments")
	if len(data) != 3 {
		t.Fatalf("Commitments rows %q, want a header and two", data)
	}
	h := data[0]
	sums := func(from, to string) string {
		return querySQL(t, db, `SELECT CAST(sum(cost) AS VARCHAR) FROM usage WHERE entitlement = 'ent-pool' AND currency = 'USD'
			AND basis = 'usage' AND granularity = 'day' AND date >= CAST(? AS TIMESTAMP) AND date < CAST(? AS TIMESTAMP)`, from, to)[0][0]
	}
	p := one(t, data, map[string]string{"Entitlement": "ent-pool"})
	if at(p, colOf(t, h, "Commitment")) != "Encoding pool 2026" || at(p, colOf(t, h, "Type")) != "spend" ||
		at(p, colOf(t, h, "Currency or unit")) != "USD" || at(p, colOf(t, h, "Period")) != "2026-09-01 to 2026-12-31" {
		t.Errorf("pool row %q", p)
	}
	sameAmount(t, "committed", at(p, colOf(t, h, "Committed")), "1000")
	sameAmount(t, "drawn this month", at(p, colOf(t, h, "Drawn this month")), sums("2026-10-01", "2026-11-01"))
	sameAmount(t, "drawn to date", at(p, colOf(t, h, "Drawn to date")), sums("2026-09-01", "2026-11-01"))
	sameAmount(t, "remaining", at(p, colOf(t, h, "Remaining")), "600")
	if got, want := at(p, colOf(t, h, "Runs out at the month's pace")), strconv.Itoa(excelDate(time.Date(2026, 12, 30, 0, 0, 0, 0, time.UTC))); got != want {
		t.Errorf("pool runs out %q, want %s (2026-12-30)", got, want)
	}
	for _, c := range []string{"Committed", "Drawn this month", "Drawn to date", "Remaining"} {
		if format, _ := cellFormat(t, f, "Commitments", colOf(t, h, c)+1, 2); format != moneyFormat("USD") {
			t.Errorf("pool %s format %q, want %q", c, format, moneyFormat("USD"))
		}
	}
	if format, _ := cellFormat(t, f, "Commitments", colOf(t, h, "Runs out at the month's pace")+1, 2); format != "yyyy-mm-dd" {
		t.Errorf("runs out format %q", format)
	}

	m := one(t, data, map[string]string{"Entitlement": "ent-min"})
	minutes := querySQL(t, db, `SELECT CAST(sum(quantity) AS VARCHAR) FROM usage WHERE entitlement = 'ent-min' AND date >= DATE '2026-10-01' AND date < DATE '2026-11-01'`)[0][0]
	if at(m, colOf(t, h, "Commitment")) != "entitlement ent-min" || at(m, colOf(t, h, "Type")) != "usage" || at(m, colOf(t, h, "Currency or unit")) != "Minutes" {
		t.Errorf("minutes row %q", m)
	}
	for _, c := range []string{"Drawn this month", "Drawn to date"} {
		if got := mustFloat(t, at(m, colOf(t, h, c))); got != mustFloat(t, minutes) || got != 500 {
			t.Errorf("minutes %s %v, want %s from the rows", c, got, minutes)
		}
	}
	if got := mustFloat(t, at(m, colOf(t, h, "Remaining"))); got != 99500 {
		t.Errorf("minutes remaining %v", got)
	}
	if got := at(m, colOf(t, h, "Runs out at the month's pace")); got != "lasts past its end" {
		t.Errorf("minutes runs out %q", got)
	}
	if format, _ := cellFormat(t, f, "Commitments", colOf(t, h, "Drawn to date")+1, 3); format != "#,##0.00####" {
		t.Errorf("minutes format %q, want the quantity format", format)
	}
	how := at(p, colOf(t, h, "How it is measured"))
	for _, want := range []string{"310.00 USD over 31 days, 2026-10-01 to 2026-10-31", "1 rows of the entitlement"} {
		if !strings.Contains(how, want) {
			t.Errorf("pool measured %q, want %q in it", how, want)
		}
	}

	// The total per currency: spend only (minutes are no currency).
	row := footRow(t, f, "Commitments", "Total USD")
	if row == 0 {
		t.Fatalf("Commitments has no Total USD row: %q", rows(t, f, "Commitments"))
	}
	ref, _ := excelize.CoordinatesToCellName(colOf(t, h, "Drawn to date")+1, row)
	raw, _ := f.GetCellValue("Commitments", ref, excelize.Options{RawCellValue: true})
	sameAmount(t, "total drawn to date", raw, sums("2026-09-01", "2026-11-01"))
	if footRow(t, f, "Commitments", "Total Minutes") != 0 || footRow(t, f, "Commitments", "Total EUR") != 0 {
		t.Errorf("a total of no currency: %q", rows(t, f, "Commitments"))
	}

	flagged := find(t, flagRows(t, f), map[string]string{"Kind": "Commitment runs out before its end"})
	if len(flagged) != 1 || at(flagged[0], colOf(t, flagRows(t, f)[0], "Subject")) != "Encoding pool 2026" {
		t.Errorf("flags %q, want the pool once", flagged)
	}
	if got := summaryValue(t, f, "Commitment runs out before its end"); got != "1" {
		t.Errorf("Summary counts %s commitments running out, want 1", got)
	}

	// No commitments configured: no sheet, and the Summary counts none.
	f, _ = build(t, db, reports.Options{})
	if slices.Contains(f.GetSheetList(), "Commitments") {
		t.Errorf("sheets %q without commitments", f.GetSheetList())
	}
	for _, r := range rows(t, f, "Summary") {
		if at(r, 0) == "Commitment runs out before its end" {
			t.Errorf("Summary counts commitments without any configured: %q", r)
		}
	}
}

// commitmentsFixture loads TestCommitmentsSheet's rows (a spend pool of
// 1000 USD drawn 90 in September and 10 a day in October, with a row
// before its start and one in EUR; a usage commitment of 100000 minutes)
// and returns the config's terms for them.
func commitmentsFixture(t *testing.T, db *sql.DB) []tally.CommitmentTerms {
	t.Helper()
	pool := func(date time.Time, cost, currency string) {
		addUsage(t, db, use{date: date, meter: "video_encoding_ondemand", unit: "minutes", qty: 10, cost: cost, currency: currency,
			entType: "cash", ent: "ent-pool", pm: pm1, pmName: "Direct USD", project: "alpha"})
	}
	pool(time.Date(2026, 8, 31, 0, 0, 0, 0, time.UTC), "500", "USD") // before its start
	pool(time.Date(2026, 9, 10, 0, 0, 0, 0, time.UTC), "45.5", "USD")
	pool(time.Date(2026, 9, 20, 0, 0, 0, 0, time.UTC), "44.5", "USD")
	for d := 1; d <= 31; d++ {
		pool(day(d), "10", "USD")
	}
	pool(day(12), "7", "EUR") // another currency: apart
	for d := 1; d <= 5; d++ {
		addUsage(t, db, use{date: day(d * 3), meter: "live_streaming_minutes", unit: "minutes", qty: 100, cost: "0.1", currency: "EUR",
			entType: "quantity", ent: "ent-min", pm: pm2, pmName: "Marketplace EUR", project: "beta"})
	}
	dayOf := func(s string) time.Time {
		d, err := time.Parse(tally.DateLayout, s)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	terms := []tally.CommitmentTerms{
		{Entitlement: "ent-pool", Name: "Encoding pool 2026", Path: "commitments[0]", Category: tally.CommitmentCategorySpend,
			Size: tally.MustDecimal("1000"), Currency: "USD", Start: dayOf("2026-09-01"), End: dayOf("2026-12-31")},
		{Entitlement: "ent-min", Path: "commitments[1]", Category: tally.CommitmentCategoryUsage,
			Size: tally.MustDecimal("100000"), Unit: "Minutes", Start: dayOf("2026-10-01"), End: dayOf("2027-09-30")},
	}
	return terms
}
