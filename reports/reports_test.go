package reports_test

import (
	"archive/zip"
	"bytes"
	"context"
	"database/sql"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	_ "github.com/duckdb/duckdb-go/v2"
	"github.com/xuri/excelize/v2"

	"github.com/tally-dev/tally"
	"github.com/tally-dev/tally/reports"
)

// The fixture month and the clock: the month is closed on the 10th of the
// next month.
var (
	october = time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC)
	now     = time.Date(2026, 11, 10, 8, 30, 0, 0, time.UTC)
	period  = reports.Period{Month: october, Basis: tally.BasisUsage, Granularity: tally.Day}
)

const (
	pm1   = "11111111-1111-4111-8111-111111111111" // direct, USD, valid until 2026-10-16 (exclusive)
	pm2   = "22222222-2222-4222-8222-222222222222" // marketplace, EUR, valid from 2026-10-15
	pm3   = "33333333-3333-4333-8333-333333333333" // in usage only: no snapshot, no rate card
	runID = "0194c3a0-0000-7000-8000-000000000001"
)

// openDB creates a temp-dir database with the schema (see OpenTestDB).
func openDB(t *testing.T) *sql.DB { return reports.OpenTestDB(t, "tally.duckdb") }

// use is one usage row of the fixture; zero fields take the defaults of
// addUsage.
type use struct {
	granularity, basis string
	date               time.Time
	processed          *time.Time
	unprocessed        bool
	meter, sku, unit   string
	family, solution   string
	qty                float64
	cost, currency     string
	entType            string
	ent                string // the entitlement id; empty: "ent-" and entType when that is set
	pm, pmName         string
	project            string
}

func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func addUsage(t *testing.T, db *sql.DB, u use) {
	t.Helper()
	if u.granularity == "" {
		u.granularity = "day"
	}
	if u.basis == "" {
		u.basis = "usage"
	}
	var processed any = u.date.AddDate(0, 0, 1)
	switch {
	case u.unprocessed:
		processed = nil
	case u.processed != nil:
		processed = *u.processed
	}
	var price any
	if u.qty != 0 {
		c, _ := strconv.ParseFloat(u.cost, 64)
		price = c / u.qty
	}
	_, err := db.Exec(`INSERT INTO usage (granularity, basis, date, date_processed, meter_name, meter_sku, family, solution, unit, quantity, price, cost, currency, entitlement, entitlement_type, payment_method, payment_method_name, project, run_id, fetched_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, CAST(? AS DECIMAL(38,12)), ?, ?, ?, ?, ?, ?, CAST(? AS UUID), ?)`,
		u.granularity, u.basis, u.date, processed, u.meter, nullable(u.sku), nullable(u.family), nullable(u.solution),
		nullable(u.unit), u.qty, price, u.cost, u.currency, nullable(entitlementOf(u)),
		nullable(u.entType), nullable(u.pm), nullable(u.pmName), nullable(u.project), runID, now.Add(-48*time.Hour))
	if err != nil {
		t.Fatalf("insert usage %+v: %v", u, err)
	}
}

// entitlementOf is u's entitlement id: ent when given, else "ent-" and
// its type when it has one.
func entitlementOf(u use) string {
	if u.ent == "" && u.entType != "" {
		return "ent-" + u.entType
	}
	return u.ent
}

func day(d int) time.Time { return october.AddDate(0, 0, d-1) }

func execSQL(t *testing.T, db *sql.DB, q string, args ...any) {
	t.Helper()
	if _, err := db.Exec(q, args...); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

// seed loads the fixture: two currencies, project alpha switching from
// pm1 (USD) to pm2 (EUR) on the 15th, every payment category, formula-like
// text from the interface, a meter with no price, uncharged rows, and rows
// of other months, bases and granularities that must stay out.
func seed(t *testing.T, db *sql.DB) {
	t.Helper()
	for d := 1; d <= 16; d++ {
		cost := "1.500000000000"
		if d == 10 {
			cost = "1.650000000000" // billed over the rate card
		}
		addUsage(t, db, use{date: day(d), meter: "video_encoding_ondemand", sku: "SKU-ENC", unit: "minutes",
			family: "video", solution: "encoding", qty: 100, cost: cost, currency: "USD",
			pm: pm1, pmName: "Direct USD", project: "alpha"})
	}
	for d := 15; d <= 20; d++ {
		addUsage(t, db, use{date: day(d), meter: "video_encoding_ondemand", unit: "minutes",
			family: "video", solution: "encoding", qty: 100, cost: "1.300000000000", currency: "EUR",
			pm: pm2, pmName: "Marketplace EUR", project: "alpha"})
	}
	for i, e := range []struct {
		typ  string
		qty  float64
		cost string
	}{{"Cash", 10.5, "0.210000000000"}, {"PreCommitment", 20, "0.400000000000"}, {"pre-commitment", 5, "0.100000000000"}, {"Quantity", 1, "0.020000000000"}} {
		addUsage(t, db, use{date: day(3 + i), meter: "storage_gb", unit: "GB", family: "storage", solution: "vod",
			qty: e.qty, cost: e.cost, currency: "USD", entType: e.typ, pm: pm1, pmName: "Direct USD", project: "beta"})
	}
	for _, d := range []int{17, 18} {
		addUsage(t, db, use{date: day(d), meter: "live_streaming_minutes", sku: "SKU-LIVE", unit: "minutes",
			family: "live", solution: "streaming", qty: 60, cost: "0.060000000000", currency: "EUR",
			entType: "License", pm: pm2, pmName: "Marketplace EUR", project: "beta"})
	}
	// Formula-like text as the interface might send it.
	addUsage(t, db, use{date: day(7), meter: "-2", unit: "each", qty: 1, cost: "3.333333333333", currency: "USD",
		entType: "@x", pm: pm3, pmName: "+SUM(A1)", project: "=1+1"})
	// An entitlement the interface sent without a type: how it is paid is
	// unknown, so it counts with the unknown types.
	addUsage(t, db, use{date: day(7), meter: "-2", unit: "each", qty: 1, cost: "1.000000000000", currency: "USD",
		ent: "ent-untyped", pm: pm3, pmName: "+SUM(A1)", project: "=1+1"})
	// A meter no rate card prices, not charged yet, under an unknown
	// entitlement type; 10.925 EUR in all puts the EUR total on a half cent.
	addUsage(t, db, use{date: day(8), meter: "mystery_meter", unit: "each", qty: 2, cost: "2.005000000000",
		currency: "EUR", entType: "promo-credit", pm: pm2, pmName: "Marketplace EUR", project: "gamma", unprocessed: true})
	// A meter two different pm1 prices match, and pm1 usage in a currency
	// its USD rate card is not in.
	addUsage(t, db, use{date: day(2), meter: "transcode_x", unit: "minutes", qty: 10, cost: "0.500000000000",
		currency: "USD", pm: pm1, pmName: "Direct USD", project: "beta"})
	addUsage(t, db, use{date: day(2), meter: "storage_gb", unit: "GB", qty: 50, cost: "1.000000000000",
		currency: "EUR", pm: pm1, pmName: "Direct USD", project: "beta"})
	// Rows that belong to other months, bases or granularities.
	addUsage(t, db, use{date: time.Date(2026, 9, 30, 0, 0, 0, 0, time.UTC), meter: "video_encoding_ondemand", qty: 1, cost: "100", currency: "USD", pm: pm1, project: "alpha"})
	addUsage(t, db, use{date: time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC), meter: "video_encoding_ondemand", qty: 1, cost: "100", currency: "USD", pm: pm1, project: "alpha"})
	addUsage(t, db, use{basis: "reported", date: day(5), meter: "video_encoding_ondemand", qty: 1, cost: "1000", currency: "USD", pm: pm1, project: "alpha"})
	addUsage(t, db, use{granularity: "hour", date: day(5).Add(3 * time.Hour), meter: "video_encoding_ondemand", qty: 1, cost: "1000", currency: "USD", pm: pm1, project: "alpha"})

	s1 := time.Date(2026, 9, 20, 2, 0, 0, 0, time.UTC)
	s2 := time.Date(2026, 11, 5, 2, 0, 0, 0, time.UTC) // after the month: must not be used
	for _, s := range []struct {
		at     time.Time
		pm1End string
	}{{s1, "2026-10-16"}, {s2, "2026-12-01"}} {
		execSQL(t, db, `INSERT INTO payment_method_snapshots (snapshot_at, run_id, id, display_name, type, start_date, end_date,
			product_publication_name, sales_order_number, projects, is_active, spec)
			VALUES (?, CAST(? AS UUID), ?, 'Direct USD', 'direct', DATE '2026-01-01', CAST(? AS DATE), 'pub', 'SO-1001', ['beta', 'alpha'], true,
			'{"type":"direct","salesOrderNumber":"SO-1001","startDate":"2026-01-01"}')`, s.at, runID, pm1, s.pm1End)
		execSQL(t, db, `INSERT INTO payment_method_snapshots (snapshot_at, run_id, id, display_name, type, start_date, end_date,
			product_publication_name, projects, is_active, spec)
			VALUES (?, CAST(? AS UUID), ?, 'Marketplace EUR', 'marketplaceA', DATE '2026-10-15', NULL, 'pub', ['alpha', 'beta', 'gamma'], true,
			'{"type":"marketplaceA","marketplaceAAccountId":"acc-42","marketplaceAOfferId":"offer-7","marketplaceACustomerId":null,"notes":"n"}')`, s.at, runID, pm2)
	}
	price := func(at time.Time, pm, currency, family, name, sku, loc, p string) {
		execSQL(t, db, `INSERT INTO rate_card_price_snapshots (snapshot_at, run_id, payment_method_id, currency, family, name, sku, unit, location_group, price)
			VALUES (?, CAST(? AS UUID), ?, ?, ?, ?, ?, 'unit', ?, CAST(? AS DECIMAL(38,12)))`, at, runID, pm, currency, family, name, nullable(sku), nullable(loc), p)
	}
	price(s1, pm1, "USD", "video", "advanced_sd(video_encoding_ondemand)", "SKU-ENC", "", "0.015")
	price(s1, pm1, "USD", "video", "advanced_sd(video_encoding_ondemand)", "SKU-ENC-EU", "eu", "0.02")
	price(s1, pm1, "USD", "storage", "storage_gb", "SKU-STO", "", "0.02")
	price(s1, pm1, "USD", "video", "advanced_sd(transcode_x)", "SKU-TX-SD", "", "0.05")
	price(s1, pm1, "USD", "video", "premium_hd(transcode_x)", "SKU-TX-HD", "", "0.08")
	price(s2, pm1, "USD", "video", "advanced_sd(video_encoding_ondemand)", "SKU-ENC", "", "0.5")
	price(s2, pm1, "USD", "storage", "storage_gb", "SKU-STO", "", "0.5")
	octCard := time.Date(2026, 10, 14, 0, 0, 0, 0, time.UTC)
	price(octCard, pm2, "EUR", "video", "advanced_sd(video_encoding_ondemand)", "SKU-ENC-EU", "", "0.013")
	price(octCard, pm2, "EUR", "live", "live_streaming_minutes", "SKU-LIVE", "", "0.001")

	execSQL(t, db, `INSERT INTO runs (id, command, started, finished, status, rows, windows) VALUES (CAST(? AS UUID), 'fetch', ?, ?, 'ok', 40, 1)`,
		runID, now.Add(-48*time.Hour), now.Add(-47*time.Hour))
	execSQL(t, db, `INSERT INTO fetch_windows (granularity, basis, scope, start, "end", rows, run_id, fetched_at)
		VALUES ('day', 'usage', 'all', DATE '2026-10-01', DATE '2026-11-01', 40, CAST(? AS UUID), ?)`, runID, now.Add(-48*time.Hour))
}

// build writes the fixture's workbook to a file and opens it for reading.
func build(t *testing.T, db *sql.DB, opts reports.Options) (*excelize.File, string) {
	t.Helper()
	return buildPeriod(t, db, period, opts)
}

// buildPeriod is build for the period p.
func buildPeriod(t *testing.T, db *sql.DB, p reports.Period, opts reports.Options) (*excelize.File, string) {
	t.Helper()
	if opts.Now == nil {
		opts.Now = func() time.Time { return now }
	}
	path := reports.DefaultPath(t.TempDir(), p.Month)
	if err := reports.WriteFile(context.Background(), db, p, path, opts); err != nil {
		t.Fatal(err)
	}
	f, err := excelize.OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f, path
}

// rows reads a sheet's raw cell values (numbers unformatted).
func rows(t *testing.T, f *excelize.File, sheet string) [][]string {
	t.Helper()
	r, err := f.GetRows(sheet, excelize.Options{RawCellValue: true})
	if err != nil {
		t.Fatalf("read sheet %s: %v", sheet, err)
	}
	return r
}

// colOf is the index of a header.
// flagRows is the Flags sheet's table: its rows up to the first blank
// one, after which the Anomalies section follows.
func flagRows(t *testing.T, f *excelize.File) [][]string {
	t.Helper()
	all := rows(t, f, "Flags")
	for i, r := range all {
		if len(r) == 0 {
			return all[:i]
		}
	}
	return all
}

func colOf(t *testing.T, header []string, name string) int {
	t.Helper()
	i := slices.Index(header, name)
	if i < 0 {
		t.Fatalf("no column %q in %q", name, header)
	}
	return i
}

func at(row []string, i int) string {
	if i < len(row) {
		return row[i]
	}
	return ""
}

// find returns the rows where every column named in want has that value.
func find(t *testing.T, table [][]string, want map[string]string) [][]string {
	t.Helper()
	var out [][]string
	for _, r := range table[1:] {
		ok := true
		for k, v := range want {
			if at(r, colOf(t, table[0], k)) != v {
				ok = false
			}
		}
		if ok {
			out = append(out, r)
		}
	}
	return out
}

func one(t *testing.T, table [][]string, want map[string]string) []string {
	t.Helper()
	r := find(t, table, want)
	if len(r) != 1 {
		t.Fatalf("want one row with %v, found %d: %q", want, len(r), r)
	}
	return r[0]
}

// querySQL runs check SQL written here, apart from the report's queries.
func querySQL(t *testing.T, db *sql.DB, q string, args ...any) [][]string {
	t.Helper()
	r, err := db.Query(q, args...)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	defer r.Close()
	cols, _ := r.Columns()
	var out [][]string
	for r.Next() {
		vals := make([]sql.NullString, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := r.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		row := make([]string, len(cols))
		for i, v := range vals {
			row[i] = v.String
		}
		out = append(out, row)
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// sameAmount checks a money cell against an exact decimal: the cell holds
// the double nearest the decimal, and shows the decimal rounded to the cent.
func sameAmount(t *testing.T, what, cellValue, decimal string) {
	t.Helper()
	want, err := tally.ParseDecimal(decimal)
	if err != nil {
		t.Fatalf("%s: check SQL gave %q: %v", what, decimal, err)
	}
	wantF, _ := want.Rat().Float64()
	got, err := strconv.ParseFloat(cellValue, 64)
	if err != nil {
		t.Fatalf("%s: cell %q is not a number", what, cellValue)
	}
	if got != wantF {
		t.Errorf("%s: cell %v, SQL %s (nearest double %v)", what, got, decimal, wantF)
	}
	if g, w := displayCents(got), centsOf(want.Rat()); g != w {
		t.Errorf("%s: cell shows %s, SQL total rounds to %s", what, g, w)
	}
}

// displayCents is what a spreadsheet shows for v with two decimals: the
// 15-significant-digit decimal of the double, rounded half away from zero.
func displayCents(v float64) string {
	r, _ := new(big.Rat).SetString(strconv.FormatFloat(v, 'g', 15, 64))
	return centsOf(r)
}

func centsOf(r *big.Rat) string {
	x := new(big.Rat).Mul(r, big.NewRat(100, 1))
	q, rem := new(big.Int).QuoRem(x.Num(), x.Denom(), new(big.Int))
	if new(big.Int).Mul(new(big.Int).Abs(rem), big.NewInt(2)).Cmp(x.Denom()) >= 0 {
		if x.Sign() < 0 {
			q.Sub(q, big.NewInt(1))
		} else {
			q.Add(q, big.NewInt(1))
		}
	}
	return tally.NewDecimal(q, 2).String()
}

// monthFilter is the check SQL's own filter for the fixture period.
const monthFilter = `basis = 'usage' AND granularity = 'day' AND date >= TIMESTAMP '2026-10-01' AND date < TIMESTAMP '2026-11-01'`

// summaryTable returns the Summary rows from the header row starting with
// first up to the next blank row.
func summaryTable(t *testing.T, f *excelize.File, first string) [][]string {
	t.Helper()
	all := rows(t, f, "Summary")
	for i, r := range all {
		if at(r, 0) == first && i+1 < len(all) {
			out := [][]string{r}
			for _, x := range all[i+1:] {
				if len(x) == 0 || at(x, 0) == "" {
					break
				}
				out = append(out, x)
			}
			return out
		}
	}
	t.Fatalf("summary has no table headed %q", first)
	return nil
}

func summaryValue(t *testing.T, f *excelize.File, label string) string {
	t.Helper()
	for _, r := range rows(t, f, "Summary") {
		if at(r, 0) == label {
			return at(r, 1)
		}
	}
	t.Fatalf("summary has no line %q", label)
	return ""
}

func TestSheetsInOrder(t *testing.T) {
	db := openDB(t)
	seed(t, db)
	f, _ := build(t, db, reports.Options{})
	want := []string{"Summary", "By project", "By meter", "By payment method", "Rate card check", "Flags", "Daily", "Detail", "Notes"}
	if got := f.GetSheetList(); !slices.Equal(got, want) {
		t.Fatalf("sheets %q, want %q", got, want)
	}
}

func TestTotalsMatchSQL(t *testing.T) {
	db := openDB(t)
	seed(t, db)
	f, _ := build(t, db, reports.Options{})

	// Per currency, each payment category, the SQL written here.
	check := querySQL(t, db, `
		SELECT currency,
		       CAST(count(*) AS VARCHAR),
		       CAST(coalesce(sum(cost) FILTER (WHERE entitlement IS NULL), 0) AS VARCHAR),
		       CAST(coalesce(sum(cost) FILTER (WHERE entitlement_type IN ('Cash', 'PreCommitment', 'pre-commitment', 'Quantity')), 0) AS VARCHAR),
		       CAST(coalesce(sum(cost) FILTER (WHERE entitlement_type = 'License'), 0) AS VARCHAR),
		       CAST(coalesce(sum(cost) FILTER (WHERE entitlement_type IN ('@x', 'promo-credit') OR entitlement IS NOT NULL AND entitlement_type IS NULL), 0) AS VARCHAR),
		       CAST(sum(cost) AS VARCHAR)
		FROM usage WHERE `+monthFilter+` GROUP BY currency ORDER BY currency`)
	if len(check) != 2 {
		t.Fatalf("fixture has %d currencies, want 2", len(check))
	}
	totals := summaryTable(t, f, "Currency")
	if len(totals) != 3 {
		t.Fatalf("summary totals have %d rows, want a header and 2 currencies: %q", len(totals), totals)
	}
	names := []string{"Billed directly", "Drawn from a balance", "Covered by a license", "Other entitlement types", "Total usage value"}
	for _, c := range check {
		r := one(t, totals, map[string]string{"Currency": c[0]})
		if got := at(r, colOf(t, totals[0], "Rows")); got != c[1] {
			t.Errorf("%s rows %s, SQL %s", c[0], got, c[1])
		}
		for i, n := range names {
			sameAmount(t, "Summary "+c[0]+" "+n, at(r, colOf(t, totals[0], n)), c[2+i])
		}
	}
	// Every category is exercised by the fixture.
	for _, c := range check {
		for i := 2; i < 6; i++ {
			if c[0] == "USD" && i == 4 || c[0] == "EUR" && i == 3 {
				continue
			}
			if d, _ := tally.ParseDecimal(c[i]); d.IsZero() {
				t.Errorf("fixture leaves %s %s empty", c[0], names[i-2])
			}
		}
	}
	// The EUR total is 10.925: the cell must still show 10.93.
	if got := displayCents(mustFloat(t, at(one(t, totals, map[string]string{"Currency": "EUR"}), 6))); got != "10.93" {
		t.Errorf("EUR total shows %s, want 10.93", got)
	}

	// Per project and currency.
	byProject := dataRows(t, f, "By project")
	check = querySQL(t, db, `
		SELECT project, currency, CAST(count(*) AS VARCHAR),
		       CAST(coalesce(sum(cost) FILTER (WHERE entitlement IS NULL), 0) AS VARCHAR),
		       CAST(coalesce(sum(cost) FILTER (WHERE entitlement_type IN ('Cash', 'PreCommitment', 'pre-commitment', 'Quantity')), 0) AS VARCHAR),
		       CAST(coalesce(sum(cost) FILTER (WHERE entitlement_type = 'License'), 0) AS VARCHAR),
		       CAST(coalesce(sum(cost) FILTER (WHERE entitlement_type IN ('@x', 'promo-credit') OR entitlement IS NOT NULL AND entitlement_type IS NULL), 0) AS VARCHAR),
		       CAST(sum(cost) AS VARCHAR)
		FROM usage WHERE `+monthFilter+` GROUP BY ALL ORDER BY ALL`)
	if len(byProject)-1 != len(check) {
		t.Fatalf("By project has %d rows, SQL %d", len(byProject)-1, len(check))
	}
	for _, c := range check {
		r := one(t, byProject, map[string]string{"Project": c[0], "Currency": c[1]})
		if got := at(r, colOf(t, byProject[0], "Rows")); got != c[2] {
			t.Errorf("project %s %s rows %s, SQL %s", c[0], c[1], got, c[2])
		}
		for i, n := range names {
			sameAmount(t, "By project "+c[0]+" "+c[1]+" "+n, at(r, colOf(t, byProject[0], n)), c[3+i])
		}
	}
	// alpha switched payment method mid-month: one line per currency.
	if n := len(find(t, byProject, map[string]string{"Project": "alpha"})); n != 2 {
		t.Errorf("alpha has %d lines, want 2 (USD then EUR)", n)
	}

	// Daily columns add up to the currency totals, to the cent.
	daily := dataRows(t, f, "Daily")
	for _, c := range querySQL(t, db, `SELECT currency, CAST(sum(cost) AS VARCHAR) FROM usage WHERE `+monthFilter+` GROUP BY ALL`) {
		col := colOf(t, daily[0], c[0])
		sum := new(big.Rat)
		for _, r := range daily[1:] {
			v, _ := new(big.Rat).SetString(strconv.FormatFloat(mustFloat(t, at(r, col)), 'g', 15, 64))
			sum.Add(sum, v)
		}
		want, _ := tally.ParseDecimal(c[1])
		if centsOf(sum) != centsOf(want.Rat()) {
			t.Errorf("Daily %s adds up to %s, SQL %s", c[0], centsOf(sum), c[1])
		}
	}

	// By meter and by payment method add up per currency too.
	for _, s := range []struct{ sheet, col string }{{"By meter", "Usage value"}, {"By payment method", "Usage value"}} {
		tab := dataRows(t, f, s.sheet)
		for _, c := range querySQL(t, db, `SELECT currency, CAST(sum(cost) AS VARCHAR) FROM usage WHERE `+monthFilter+` GROUP BY ALL`) {
			sum := new(big.Rat)
			for _, r := range find(t, tab, map[string]string{"Currency": c[0]}) {
				v, _ := new(big.Rat).SetString(strconv.FormatFloat(mustFloat(t, at(r, colOf(t, tab[0], s.col))), 'g', 15, 64))
				sum.Add(sum, v)
			}
			want, _ := tally.ParseDecimal(c[1])
			if centsOf(sum) != centsOf(want.Rat()) {
				t.Errorf("%s %s adds up to %s, SQL %s", s.sheet, c[0], centsOf(sum), c[1])
			}
		}
	}
}

func mustFloat(t *testing.T, s string) float64 {
	t.Helper()
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatalf("cell %q is not a number", s)
	}
	return v
}

func TestRateCardCheck(t *testing.T) {
	db := openDB(t)
	seed(t, db)
	f, _ := build(t, db, reports.Options{Tolerance: reports.DefaultTolerance})
	rc := rows(t, f, "Rate card check")
	h := rc[0]

	// Variance computed here from the prices in force in October (the
	// September snapshot for pm1, not November's).
	check := querySQL(t, db, `
		SELECT CAST(sum(cost) AS VARCHAR),
		       CAST(CAST(sum(quantity) AS DECIMAL(38,12)) * 0.015 AS DECIMAL(38,12))::VARCHAR,
		       CAST(sum(cost) - CAST(sum(quantity) AS DECIMAL(38,12)) * 0.015 AS DECIMAL(38,12))::VARCHAR,
		       (CAST(sum(cost) AS DOUBLE) - sum(quantity) * 0.015) / (sum(quantity) * 0.015)
		FROM usage WHERE `+monthFilter+` AND meter_name = 'video_encoding_ondemand' AND payment_method = ?`, pm1)[0]
	r := one(t, rc, map[string]string{"Meter": "video_encoding_ondemand", "Payment method id": pm1})
	sameAmount(t, "usage value", at(r, colOf(t, h, "Usage value")), check[0])
	sameAmount(t, "expected cost", at(r, colOf(t, h, "Expected cost")), check[1])
	sameAmount(t, "variance", at(r, colOf(t, h, "Variance")), check[2])
	if got, want := mustFloat(t, at(r, colOf(t, h, "Variance %"))), mustFloat(t, check[3]); abs(got-want) > 1e-12 {
		t.Errorf("variance %% %v, SQL %v", got, want)
	}
	if got := at(r, colOf(t, h, "Rate card price")); mustFloat(t, got) != 0.015 {
		t.Errorf("pm1 price %s, want 0.015 from the snapshot in force in October", got)
	}
	for col, want := range map[string]string{"Matched by": "sku", "Status": "variance", "Flagged": "Yes", "Currency": "USD"} {
		if got := at(r, colOf(t, h, col)); got != want {
			t.Errorf("pm1 video %s = %q, want %q", col, got, want)
		}
	}

	// The other match rules, and rows within tolerance.
	for _, c := range []struct{ meter, pm, currency, matched, status string }{
		{"video_encoding_ondemand", pm2, "EUR", "meter name in parentheses", "ok"},
		{"storage_gb", pm1, "USD", "name", "ok"},
		{"live_streaming_minutes", pm2, "EUR", "sku", "ok"},
	} {
		r := one(t, rc, map[string]string{"Meter": c.meter, "Payment method id": c.pm, "Currency": c.currency})
		if got := at(r, colOf(t, h, "Matched by")); got != c.matched {
			t.Errorf("%s on %s matched by %q, want %q", c.meter, c.pm, got, c.matched)
		}
		if got := at(r, colOf(t, h, "Status")); got != c.status {
			t.Errorf("%s on %s status %q, want %q", c.meter, c.pm, got, c.status)
		}
		if at(r, colOf(t, h, "Variance")) == "" {
			t.Errorf("%s on %s has no variance", c.meter, c.pm)
		}
	}

	// Meters with no price are listed, never dropped.
	for _, c := range []struct{ meter, pm string }{{"mystery_meter", pm2}, {"-2", pm3}} {
		r := one(t, rc, map[string]string{"Meter": c.meter, "Payment method id": c.pm})
		if got := at(r, colOf(t, h, "Status")); got != "no price" {
			t.Errorf("%s status %q, want no price", c.meter, got)
		}
		for _, col := range []string{"Rate card price", "Expected cost", "Variance", "Matched by"} {
			if got := at(r, colOf(t, h, col)); got != "" {
				t.Errorf("%s %s = %q, want blank", c.meter, col, got)
			}
		}
		if at(r, colOf(t, h, "Usage value")) == "" {
			t.Errorf("%s has no usage value", c.meter)
		}
	}
	// Prices that cannot be compared are said so, with no expected cost.
	for _, c := range []struct{ meter, currency, status string }{
		{"transcode_x", "USD", "several prices"},
		{"storage_gb", "EUR", "currency differs"},
	} {
		r := one(t, rc, map[string]string{"Meter": c.meter, "Payment method id": pm1, "Currency": c.currency})
		if got := at(r, colOf(t, h, "Status")); got != c.status {
			t.Errorf("%s %s status %q, want %q", c.meter, c.currency, got, c.status)
		}
		if got := at(r, colOf(t, h, "Expected cost")); got != "" {
			t.Errorf("%s %s expected cost %q, want blank", c.meter, c.currency, got)
		}
		if got := at(r, colOf(t, h, "Flagged")); got != "Yes" {
			t.Errorf("%s %s flagged %q, want Yes", c.meter, c.currency, got)
		}
	}
	if got, want := len(rc)-1, len(querySQL(t, db, `SELECT DISTINCT meter_name, payment_method, currency FROM usage WHERE `+monthFilter)); got != want {
		t.Errorf("rate card check has %d rows, usage has %d meter × payment method × currency", got, want)
	}
}

func TestToleranceDecidesFlag(t *testing.T) {
	db := openDB(t)
	seed(t, db)
	// pm1's video encoding is billed 0.625 % over the rate card.
	for _, c := range []struct {
		tolerance float64
		status    string
	}{{0, "variance"}, {0.005, "variance"}, {0.007, "ok"}, {0.01, "ok"}} {
		f, _ := build(t, db, reports.Options{Tolerance: c.tolerance})
		rc := rows(t, f, "Rate card check")
		r := one(t, rc, map[string]string{"Meter": "video_encoding_ondemand", "Payment method id": pm1})
		if got := at(r, colOf(t, rc[0], "Status")); got != c.status {
			t.Errorf("tolerance %v: status %q, want %q", c.tolerance, got, c.status)
		}
		// Exact matches stay ok even with no tolerance at all.
		r = one(t, rc, map[string]string{"Meter": "storage_gb", "Payment method id": pm1, "Currency": "USD"})
		if got := at(r, colOf(t, rc[0], "Status")); got != "ok" {
			t.Errorf("tolerance %v: exact match has status %q", c.tolerance, got)
		}
	}
}

func abs(v float64) float64 {
	if v < 0 {
		return -v
	}
	return v
}

func TestFlagsAndPaymentMethods(t *testing.T) {
	db := openDB(t)
	seed(t, db)
	f, _ := build(t, db, reports.Options{})
	fl := flagRows(t, f)

	// pm1 is valid until 2026-10-16 (exclusive) in the snapshot in force:
	// the usage of the 16th is outside it.
	// pm2 is valid from 2026-10-15: gamma's usage of the 8th is before it.
	for _, c := range []struct {
		pm   string
		day  int
		cost string
	}{{pm1, 16, "1.5"}, {pm2, 8, "2.005"}} {
		r := one(t, fl, map[string]string{"Kind": "Payment method outside its validity", "Subject": c.pm})
		if got := at(r, colOf(t, fl[0], "Rows")); got != "1" {
			t.Errorf("validity flag of %s has %s rows, want 1", c.pm, got)
		}
		sameAmount(t, "validity flag cost", at(r, colOf(t, fl[0], "Amount")), c.cost)
		if got := at(r, colOf(t, fl[0], "First day")); got != strconv.Itoa(excelDate(day(c.day))) {
			t.Errorf("validity flag of %s first day %s, want 2026-10-%02d as a date cell", c.pm, got, c.day)
		}
	}
	if n := len(find(t, fl, map[string]string{"Kind": "Payment method outside its validity"})); n != 2 {
		t.Errorf("%d validity flags, want 2", n)
	}
	unknown := find(t, fl, map[string]string{"Kind": "Unknown entitlement type"})
	var types []string
	for _, r := range unknown {
		types = append(types, at(r, colOf(t, fl[0], "Subject")))
	}
	sort.Strings(types)
	if !slices.Equal(types, []string{"(no type)", "@x", "promo-credit"}) {
		t.Errorf("unknown entitlement types %q, want (no type), @x and promo-credit (PreCommitment, pre-commitment, Cash, Quantity, License are known)", types)
	}
	r := one(t, fl, map[string]string{"Kind": "Not yet charged"})
	sameAmount(t, "not charged", at(r, colOf(t, fl[0], "Amount")), "2.005")
	// A variance flag puts the variance at stake, not the meter's whole
	// value, and advises a billing query only when some of it is invoiced.
	vf := one(t, fl, map[string]string{"Kind": "Rate card variance"})
	rc := rows(t, f, "Rate card check")
	vr := one(t, rc, map[string]string{"Meter": strings.Fields(at(vf, colOf(t, fl[0], "Subject")))[0], "Status": "variance"})
	sameAmount(t, "variance flag amount", at(vf, colOf(t, fl[0], "Amount")), at(vr, colOf(t, rc[0], "Variance")))
	invoiced := mustFloat(t, at(vr, colOf(t, rc[0], "Invoiced")))
	if query := strings.Contains(at(vf, colOf(t, fl[0], "What to do")), "billing query"); query != (invoiced != 0) {
		t.Errorf("variance flag with %v invoiced advises a billing query: %v", invoiced, query)
	}
	if n := len(find(t, fl, map[string]string{"Kind": "No rate card price"})); n != 2 {
		t.Errorf("%d no-price flags, want 2", n)
	}
	for _, r := range fl[1:] {
		if at(r, colOf(t, fl[0], "What to do")) == "" {
			t.Errorf("flag %q says nothing about what to do", r)
		}
	}
	counts := summaryTable(t, f, "Kind")
	for kind, want := range map[string]string{
		"Payment method outside its validity": "2", "Unknown entitlement type": "3", "Not yet charged": "1",
		"Rate card variance": "1", "No rate card price": "2", "Several rate card prices": "1",
		"Rate card in another currency": "1",
	} {
		if got := at(one(t, counts, map[string]string{"Kind": kind}), 1); got != want {
			t.Errorf("summary counts %s = %s, want %s", kind, got, want)
		}
	}

	// The Summary shows the entitlement without a type apart, paid as other.
	var untyped [][]string
	for _, r := range rows(t, f, "Summary") {
		if at(r, 2) == "(entitlement without a type)" {
			untyped = append(untyped, r)
		}
	}
	if len(untyped) != 1 || at(untyped[0], 0) != "USD" || at(untyped[0], 1) != "Other entitlement type" || at(untyped[0], 3) != "1" {
		t.Errorf("Summary rows of the entitlement without a type: %q", untyped)
	}

	// The month to date has nothing "not yet charged".
	g, _ := build(t, db, reports.Options{Now: func() time.Time { return time.Date(2026, 10, 31, 23, 0, 0, 0, time.UTC) }})
	if n := len(find(t, flagRows(t, g), map[string]string{"Kind": "Not yet charged"})); n != 0 {
		t.Errorf("month to date flags %d uncharged groups, want 0", n)
	}
	if got := summaryValue(t, g, "Month status"); !strings.HasPrefix(got, "Month to date") {
		t.Errorf("month status on Oct 31 %q, want month to date", got)
	}
	// Over, but nobody closed it: the workbook must not say closed.
	if got := summaryValue(t, f, "Month status"); !strings.HasPrefix(got, "Over, not closed") {
		t.Errorf("month status on Nov 10 %q, want over, not closed", got)
	}

	pm := rows(t, f, "By payment method")
	r = one(t, pm, map[string]string{"Payment method id": pm1, "Currency": "USD"})
	for col, want := range map[string]string{
		"Type": "direct", "Sales order number": "SO-1001", "Projects of the payment method": "alpha, beta",
		"Valid until (first invalid day)": strconv.Itoa(excelDate(day(16))),
	} {
		if got := at(r, colOf(t, pm[0], col)); got != want {
			t.Errorf("pm1 %s = %q, want %q", col, got, want)
		}
	}
	r = one(t, pm, map[string]string{"Payment method id": pm2})
	if got := at(r, colOf(t, pm[0], "Marketplace ids")); got != "marketplaceAAccountId: acc-42; marketplaceAOfferId: offer-7" {
		t.Errorf("pm2 marketplace ids %q", got)
	}
	r = one(t, pm, map[string]string{"Payment method id": pm3})
	if got := at(r, colOf(t, pm[0], "Name")); got != "+SUM(A1)" {
		t.Errorf("pm3 name %q, want the name from usage", got)
	}

	if got := summaryValue(t, f, "Last loaded window, first day"); got != strconv.Itoa(excelDate(october)) {
		t.Errorf("last loaded window starts %s", got)
	}
	if got := summaryValue(t, f, "Last run status"); got != "ok" {
		t.Errorf("last run status %q", got)
	}
}

// excelDate is a date's serial number in a 1900-based workbook.
func excelDate(t time.Time) int {
	return int(t.Sub(time.Date(1899, 12, 30, 0, 0, 0, 0, time.UTC)).Hours() / 24)
}

func TestFormulaLikeTextStaysText(t *testing.T) {
	db := openDB(t)
	seed(t, db)
	f, _ := build(t, db, reports.Options{})
	seen := map[string]bool{}
	for _, sheet := range f.GetSheetList() {
		for i, r := range rows(t, f, sheet) {
			for j, v := range r {
				ref, _ := excelize.CoordinatesToCellName(j+1, i+1)
				formula, err := f.GetCellFormula(sheet, ref)
				if err != nil {
					t.Fatal(err)
				}
				if formula != "" {
					t.Errorf("%s!%s holds formula %q", sheet, ref, formula)
				}
				switch v {
				case "=1+1", "+SUM(A1)", "-2", "@x":
					typ, _ := f.GetCellType(sheet, ref)
					if typ != excelize.CellTypeSharedString && typ != excelize.CellTypeInlineString {
						t.Errorf("%s!%s %q has cell type %v, want text", sheet, ref, v, typ)
					}
					seen[v] = true
				}
			}
		}
	}
	for _, v := range []string{"=1+1", "+SUM(A1)", "-2", "@x"} {
		if !seen[v] {
			t.Errorf("%q appears nowhere in the workbook", v)
		}
	}
}

func TestDetailSplitsPastLimit(t *testing.T) {
	db := openDB(t)
	seed(t, db)
	const limit = 7
	f, _ := build(t, db, reports.Options{DetailRowLimit: limit})
	want := querySQL(t, db, `SELECT strftime(date, '%Y-%m-%d'), coalesce(project, ''), meter_name, currency, CAST(cost AS VARCHAR)
		FROM usage WHERE `+monthFilter+` ORDER BY ALL`)
	n := len(want)
	sheets := (n + limit - 1) / limit
	var names []string
	var got [][]string
	for i := 1; i <= sheets; i++ {
		name := "Detail"
		if i > 1 {
			name = fmt.Sprintf("Detail %d", i)
		}
		names = append(names, name)
		d, err := f.GetRows(name)
		if err != nil {
			t.Fatalf("sheet %s: %v", name, err)
		}
		if len(d)-1 > limit {
			t.Errorf("%s has %d data rows, limit %d", name, len(d)-1, limit)
		}
		h := d[0]
		for _, r := range d[1:] {
			got = append(got, []string{at(r, colOf(t, h, "Date")), at(r, colOf(t, h, "Project")), at(r, colOf(t, h, "Meter")), at(r, colOf(t, h, "Currency"))})
		}
	}
	if l := f.GetSheetList(); !slices.Equal(l[7:len(l)-1], names) || l[len(l)-1] != "Notes" {
		t.Fatalf("sheets %q, want Detail sheets %q before Notes", l, names)
	}
	if len(got) != n {
		t.Fatalf("Detail sheets hold %d rows, the month has %d", len(got), n)
	}
	// Every row present once: compare as sorted multisets.
	var wantKeys, gotKeys []string
	for _, r := range want {
		wantKeys = append(wantKeys, strings.Join(r[:4], "|"))
	}
	for _, r := range got {
		gotKeys = append(gotKeys, strings.Join(r, "|"))
	}
	sort.Strings(wantKeys)
	sort.Strings(gotKeys)
	if !slices.Equal(wantKeys, gotKeys) {
		t.Errorf("Detail rows differ from the month's rows:\n got %q\nwant %q", gotKeys, wantKeys)
	}
	// Costs are exact per row: their sum over all Detail sheets matches SQL.
	total := map[string]*big.Rat{}
	for _, name := range names {
		d := rows(t, f, name)
		for _, r := range d[1:] {
			c := at(r, colOf(t, d[0], "Currency"))
			if total[c] == nil {
				total[c] = new(big.Rat)
			}
			v, _ := new(big.Rat).SetString(strconv.FormatFloat(mustFloat(t, at(r, colOf(t, d[0], "Usage value"))), 'g', 15, 64))
			total[c].Add(total[c], v)
		}
	}
	for _, c := range querySQL(t, db, `SELECT currency, CAST(sum(cost) AS VARCHAR) FROM usage WHERE `+monthFilter+` GROUP BY ALL`) {
		w, _ := tally.ParseDecimal(c[1])
		if total[c[0]] == nil || total[c[0]].Cmp(w.Rat()) != 0 {
			t.Errorf("Detail %s adds up to %v, SQL %s", c[0], total[c[0]], c[1])
		}
	}
	if got := summaryValue(t, f, "Detail sheets"); got != strconv.Itoa(sheets) {
		t.Errorf("summary says %s Detail sheets, want %d", got, sheets)
	}
	if got := summaryValue(t, f, "Usage rows in the month"); got != strconv.Itoa(n) {
		t.Errorf("summary says %s rows, want %d", got, n)
	}
	if got := summaryValue(t, f, "Why several"); !strings.Contains(got, "Detail 2") {
		t.Errorf("summary does not say the rows continue: %q", got)
	}
}

func TestDeterministic(t *testing.T) {
	db := openDB(t)
	seed(t, db)
	a, _ := build(t, db, reports.Options{DetailRowLimit: 10})
	b, _ := build(t, db, reports.Options{DetailRowLimit: 10})
	if !slices.Equal(a.GetSheetList(), b.GetSheetList()) {
		t.Fatalf("sheets differ: %q vs %q", a.GetSheetList(), b.GetSheetList())
	}
	for _, s := range a.GetSheetList() {
		ra, rb := rows(t, a, s), rows(t, b, s)
		if fmt.Sprint(ra) != fmt.Sprint(rb) {
			t.Errorf("sheet %s differs between two builds", s)
		}
		if len(ra) < 2 {
			t.Errorf("sheet %s is empty", s)
		}
	}
}

func TestBasisAndGranularityChooseRows(t *testing.T) {
	db := openDB(t)
	seed(t, db)
	for _, c := range []struct {
		name  string
		p     reports.Period
		day   time.Time // the one USD row's day on the Daily sheet
		date  string    // its Date as the Detail sheet shows it
		total string
	}{
		// The reported row was sampled on the 5th and charged on the 6th.
		{"reported", reports.Period{Month: october, Basis: tally.BasisReported, Granularity: tally.Day}, day(6), "2026-10-05", "1000"},
		{"hour", reports.Period{Month: october, Basis: tally.BasisUsage, Granularity: tally.Hour}, day(5), "2026-10-05 03:00", "1000"},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "r.xlsx")
			if err := reports.WriteFile(context.Background(), db, c.p, path, reports.Options{Now: func() time.Time { return now }}); err != nil {
				t.Fatal(err)
			}
			f, err := excelize.OpenFile(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			totals := summaryTable(t, f, "Currency")
			if len(totals) != 2 {
				t.Fatalf("totals %q, want USD only", totals)
			}
			sameAmount(t, c.name+" total", at(totals[1], colOf(t, totals[0], "Total usage value")), c.total)
			daily := dataRows(t, f, "Daily")
			if len(daily) != 2 || at(daily[1], 0) != strconv.Itoa(excelDate(c.day)) {
				t.Errorf("Daily %q, want one row on %s", daily, c.day.Format("2006-01-02"))
			}
			d, err := f.GetRows("Detail")
			if err != nil {
				t.Fatal(err)
			}
			if len(d) != 2 || at(d[1], 0) != c.date {
				t.Errorf("Detail %q, want one row dated %s", d, c.date)
			}
		})
	}
}

func TestEmptyMonth(t *testing.T) {
	db := openDB(t)
	f, _ := build(t, db, reports.Options{})
	if got := summaryValue(t, f, "Usage rows in the month"); got != "0" {
		t.Errorf("empty month has %s rows", got)
	}
	if got := summaryValue(t, f, "Last loaded window"); !strings.HasPrefix(got, "None") {
		t.Errorf("empty month's freshness %q", got)
	}
}

// cancelAfter cancels its context once n queries have started.
type cancelAfter struct {
	db     *sql.DB
	n      int
	cancel context.CancelFunc
}

func (c *cancelAfter) QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	c.n--
	if c.n == 0 {
		c.cancel()
	}
	return c.db.QueryContext(ctx, q, args...)
}

func TestCancelLeavesNoFile(t *testing.T) {
	db := openDB(t)
	seed(t, db)
	for _, after := range []int{0, 1, 3, 7} {
		t.Run(strconv.Itoa(after), func(t *testing.T) {
			dir := t.TempDir()
			path := reports.DefaultPath(dir, october)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var src reports.Source = db
			if after == 0 {
				cancel()
			} else {
				src = &cancelAfter{db: db, n: after, cancel: cancel}
			}
			err := reports.WriteFile(ctx, src, period, path, reports.Options{Now: func() time.Time { return now }})
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("WriteFile after cancel: %v, want context.Canceled", err)
			}
			if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("%s exists after a cancelled build", path)
			}
			left, _ := os.ReadDir(filepath.Dir(path))
			if len(left) != 0 {
				t.Errorf("cancelled build left %v", left)
			}
		})
	}
}

func TestWriteFileReplacesAtomically(t *testing.T) {
	db := openDB(t)
	seed(t, db)
	dir := t.TempDir()
	path := reports.DefaultPath(dir, october)
	if want := filepath.Join(dir, "2026-10", "tally-cost-2026-10.xlsx"); path != want {
		t.Fatalf("DefaultPath %s, want %s", path, want)
	}
	for range 2 {
		if err := reports.WriteFile(context.Background(), db, period, path, reports.Options{Now: func() time.Time { return now }}); err != nil {
			t.Fatal(err)
		}
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm()&^0o640 != 0 {
		t.Errorf("mode %v, want 0640 or stricter", fi.Mode().Perm())
	}
	left, _ := os.ReadDir(filepath.Dir(path))
	if len(left) != 1 {
		t.Errorf("folder holds %v, want only the workbook", left)
	}

	// A killed writer's temporary file: an hour-old one is removed by the
	// next write, a fresh one (a concurrent writer's) is left alone.
	stale := filepath.Join(filepath.Dir(path), ".tally-cost-2026-10.xlsx.123.tmp")
	fresh := filepath.Join(filepath.Dir(path), ".tally-cost-2026-10.xlsx.456.tmp")
	for _, f := range []string{stale, fresh} {
		if err := os.WriteFile(f, []byte("PK partial"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	old := time.Now().Add(-2 * time.Hour)
	if err := os.Chtimes(stale, old, old); err != nil {
		t.Fatal(err)
	}
	if err := reports.WriteFile(context.Background(), db, period, path, reports.Options{Now: func() time.Time { return now }}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("stale temporary file still there: %v", err)
	}
	if _, err := os.Stat(fresh); err != nil {
		t.Errorf("fresh temporary file removed: %v", err)
	}
}

func TestBadInput(t *testing.T) {
	db := openDB(t)
	for _, c := range []struct {
		name string
		p    reports.Period
		opts reports.Options
		want string
	}{
		{"mid-month", reports.Period{Month: day(2), Basis: tally.BasisUsage, Granularity: tally.Day}, reports.Options{}, "not the 1st of a month"},
		{"basis", reports.Period{Month: october, Basis: "invoice", Granularity: tally.Day}, reports.Options{}, `basis "invoice"`},
		{"granularity", reports.Period{Month: october, Basis: tally.BasisUsage, Granularity: "minute"}, reports.Options{}, `granularity "minute"`},
		{"tolerance", period, reports.Options{Tolerance: -1}, "tolerance -1"},
		{"limit", period, reports.Options{DetailRowLimit: 1 << 21}, "detail row limit 2097152"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var buf bytes.Buffer
			err := reports.Build(context.Background(), db, c.p, &buf, c.opts)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Build: %v, want an error naming %s", err, c.want)
			}
			if buf.Len() != 0 {
				t.Errorf("Build wrote %d bytes before failing", buf.Len())
			}
		})
	}
	for _, s := range []string{"2026-13", "2026-1", "26-10", "2026-10-01", ""} {
		if _, err := reports.ParseMonth(s); err == nil || !strings.Contains(err.Error(), "YYYY-MM") || !strings.Contains(err.Error(), fmt.Sprintf("%q", s)) {
			t.Errorf("ParseMonth(%q): %v, want an error naming the value and YYYY-MM", s, err)
		}
	}
	if m, err := reports.ParseMonth("2026-10"); err != nil || !m.Equal(october) {
		t.Errorf("ParseMonth(2026-10) = %v, %v", m, err)
	}
}

// TestLibreOffice opens the workbook in LibreOffice (headless), exports
// every sheet to CSV and checks that nothing is an error cell and the
// totals are the same.
func TestLibreOffice(t *testing.T) {
	soffice, err := exec.LookPath("soffice")
	if err != nil {
		t.Fatal("soffice (LibreOffice) is not installed: run the tests with scripts/test, which installs it (apt-get install libreoffice-calc-nogui)")
	}
	db := openDB(t)
	seed(t, db)
	_, path := build(t, db, reports.Options{DetailRowLimit: 10})
	out := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	// A profile of its own, so a LibreOffice already running elsewhere
	// does not take the job over.
	cmd := exec.CommandContext(ctx, soffice, "-env:UserInstallation=file://"+filepath.Join(out, "profile"),
		"--headless", "--convert-to", `csv:Text - txt - csv (StarCalc):44,34,76,1,,0,false,true,false,false,false,-1`,
		"--outdir", out, path)
	msg, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("soffice: %v\n%s", err, msg)
	}
	base := strings.TrimSuffix(filepath.Base(path), ".xlsx")
	sheets := map[string][][]string{}
	for _, s := range []string{"Summary", "By project", "By meter", "By payment method", "Rate card check", "Flags", "Daily", "Detail", "Detail 2", "Notes"} {
		b, err := os.ReadFile(filepath.Join(out, base+"-"+s+".csv"))
		if err != nil {
			entries, _ := os.ReadDir(out)
			t.Fatalf("LibreOffice did not export sheet %s: %v (output: %v; soffice said %s)", s, err, entries, msg)
		}
		recs, err := csv.NewReader(bytes.NewReader(b)).ReadAll()
		if err != nil {
			// Rows have varying lengths in the Summary.
			r := csv.NewReader(bytes.NewReader(b))
			r.FieldsPerRecord = -1
			if recs, err = r.ReadAll(); err != nil {
				t.Fatalf("sheet %s CSV: %v", s, err)
			}
		}
		sheets[s] = recs
		for i, rec := range recs {
			for j, v := range rec {
				for _, bad := range []string{"#VALUE!", "#REF!", "Err:", "#NAME?", "#DIV/0!", "#N/A", "#NUM!"} {
					if strings.Contains(v, bad) {
						t.Errorf("LibreOffice shows %q in %s row %d column %d", v, s, i+1, j+1)
					}
				}
			}
		}
	}
	// The Summary's totals, as LibreOffice reads them, against the SQL.
	var header []string
	found := 0
	for _, rec := range sheets["Summary"] {
		if at(rec, 0) == "Currency" && slices.Contains(rec, "Total usage value") {
			header = rec
			continue
		}
		if header == nil || at(rec, 0) == "" {
			header = nil
			continue
		}
		want := querySQL(t, db, `SELECT CAST(sum(cost) AS VARCHAR) FROM usage WHERE `+monthFilter+` AND currency = ?`, at(rec, 0))
		if len(want) != 1 {
			continue
		}
		col := colOf(t, header, "Total usage value")
		w, _ := tally.ParseDecimal(want[0][0])
		if got := displayCents(mustFloat(t, at(rec, col))); got != centsOf(w.Rat()) {
			t.Errorf("LibreOffice reads the %s total as %s, SQL %s", at(rec, 0), at(rec, col), want[0][0])
		}
		found++
	}
	if found != 2 {
		t.Errorf("found %d currency totals in LibreOffice's Summary, want 2", found)
	}
	bp := sheets["By project"]
	for _, c := range querySQL(t, db, `SELECT project, currency, CAST(sum(cost) AS VARCHAR) FROM usage WHERE `+monthFilter+` GROUP BY ALL`) {
		r := one(t, bp, map[string]string{"Project": c[0], "Currency": c[1]})
		w, _ := tally.ParseDecimal(c[2])
		if got := displayCents(mustFloat(t, at(r, colOf(t, bp[0], "Total usage value")))); got != centsOf(w.Rat()) {
			t.Errorf("LibreOffice reads %s %s as %s, SQL %s", c[0], c[1], got, c[2])
		}
	}
}

// Daily charts start their value axis at zero and label dates weekly, so a
// month of days stays readable.
func TestDailyChartAxes(t *testing.T) {
	db := openDB(t)
	seed(t, db)
	_, path := build(t, db, reports.Options{})
	zr, err := zip.OpenReader(path)
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	charts := 0
	for _, f := range zr.File {
		if !strings.HasPrefix(f.Name, "xl/charts/chart") {
			continue
		}
		charts++
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(rc)
		rc.Close()
		x := string(b)
		if !strings.Contains(x, "Daily") {
			continue // the Summary's charts are of months and projects (TestStoryChartsPointAtTheirRanges)
		}
		// A scatter chart: the days' axis, then the amounts'.
		if n := strings.Count(x, "<valAx>"); n != 2 {
			t.Fatalf("%s has %d value axes, want the days' and the amounts'", f.Name, n)
		}
		days := x[strings.Index(x, "<valAx>"):]
		if !strings.Contains(days[:strings.Index(days, "</scaling>")], fmt.Sprintf(`<min val="%d">`, excelDate(day(1)))) {
			t.Errorf("%s: days' axis does not start on the month's first day with usage", f.Name)
		}
		val := x[strings.LastIndex(x, "<valAx>"):]
		if !strings.Contains(val[:strings.Index(val, "</scaling>")], `<min val="0">`) {
			t.Errorf("%s: value axis does not start at zero", f.Name)
		}
	}
	if charts == 0 {
		t.Fatal("no chart in the workbook")
	}
}

// The Summary leads with the money (totals, how they are paid, flags), then
// the data freshness; the run that wrote it comes last, out of the finance
// reader's way.
func TestSummaryLeadsWithTheMoney(t *testing.T) {
	db := openDB(t)
	seed(t, db)
	f, _ := build(t, db, reports.Options{})
	at := map[string]int{}
	for i, r := range rows(t, f, "Summary") {
		if len(r) > 0 {
			if _, seen := at[r[0]]; !seen {
				at[r[0]] = i
			}
		}
	}
	order := []string{"Usage value per currency (never added across currencies)", "Usage value per entitlement type, as the provider names it",
		"Flagged items (see the Flags sheet for what to do)", "Data freshness", "Detail", "Produced by (for support)", "Last run id"}
	for i, name := range order {
		if _, ok := at[name]; !ok {
			t.Fatalf("Summary has no %q", name)
		}
		if i > 0 && at[name] < at[order[i-1]] {
			t.Errorf("Summary shows %q (row %d) before %q (row %d)", name, at[name]+1, order[i-1], at[order[i-1]]+1)
		}
	}
}

// Every amount shows its currency's minor unit, whatever its parts: project
// delta's CHF is half a cent billed and half a cent from a balance, shown
// 0.01 + 0.01 beside a total of 0.01 (each figure rounded on its own, as
// the Notes say), never with more decimals; the cells keep the exact
// 0.005, 0.005 and 0.01. (Before one money format, such a row showed the
// decimals it took to foot across.)
func TestFiguresShowTheMinorUnit(t *testing.T) {
	db := openDB(t)
	seed(t, db)
	for _, typ := range []string{"", "Cash"} {
		addUsage(t, db, use{date: day(4), meter: "storage_gb", unit: "GB", qty: 1, cost: "0.005", currency: "CHF",
			entType: typ, pm: pm1, pmName: "Direct USD", project: "delta"})
	}
	f, _ := build(t, db, reports.Options{})
	names := []string{"Billed directly", "Drawn from a balance", "Covered by a license", "Other entitlement types", "Total usage value"}
	check := func(sheet string, header []string, row int) {
		t.Helper()
		for _, name := range names {
			col := colOf(t, header, name) + 1
			format, _ := cellFormat(t, f, sheet, col, row)
			_, code, _ := strings.Cut(format, " ")
			currency := strings.Trim(code, `"`)
			if format != moneyFormat(currency) {
				t.Errorf("%s row %d %s: format %q", sheet, row, name, format)
			}
		}
	}
	all := rows(t, f, "Summary")
	checked := 0
	for i, r := range all {
		if at(r, 0) != "Currency" || !slices.Contains(r, "Total usage value") {
			continue
		}
		for j := i + 1; j < len(all) && at(all[j], 0) != ""; j++ {
			check("Summary", r, j+1)
			checked++
		}
	}
	byProject := dataRows(t, f, "By project")
	for i := range byProject[1:] {
		check("By project", byProject[0], i+2)
		checked++
	}
	if checked < 4 {
		t.Fatalf("checked %d rows", checked)
	}
	delta := one(t, byProject, map[string]string{"Project": "delta", "Currency": "CHF"})
	row := slices.IndexFunc(byProject, func(r []string) bool { return at(r, 0) == "delta" }) + 1
	for name, want := range map[string]string{"Billed directly": "0.005", "Drawn from a balance": "0.005", "Total usage value": "0.01"} {
		col := colOf(t, byProject[0], name)
		if got := at(delta, col); got != want {
			t.Errorf("delta CHF %s holds %s, want the exact %s", name, got, want)
		}
		if got := shownAs(t, f, "By project", col+1, row); got.Cmp(big.NewRat(1, 100)) != 0 {
			t.Errorf("delta CHF %s shows %s, want 0.01", name, got.FloatString(4))
		}
	}
}
