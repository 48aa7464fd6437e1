package reports_test

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/xuri/excelize/v2"

	"github.com/tally-dev/tally"
	"github.com/tally-dev/tally/reports"
	tallysql "github.com/tally-dev/tally/sql"
)

// A month bucket (October 2026) against payment methods whose validity it
// lies inside, outside or across, and methods in states that are flagged
// whatever the dates: the Flags sheet and payment_method_violations judge
// each bucket on what it can tell.
func TestValidityJudgedOnTheBucket(t *testing.T) {
	db := openDB(t)
	const (
		inside   = "aaaaaaaa-0000-4000-8000-000000000001" // valid all year
		across   = "aaaaaaaa-0000-4000-8000-000000000002" // valid from 2026-10-15: the month straddles it
		before   = "aaaaaaaa-0000-4000-8000-000000000003" // valid until 2026-10-01: the month is wholly after
		inverted = "aaaaaaaa-0000-4000-8000-000000000004" // end 2026-10-01 not after start 2026-11-01
		state    = "aaaaaaaa-0000-4000-8000-000000000005" // inactive, terms not accepted, streaming billed monthly
	)
	pms := []struct {
		id, from, until       string
		active, terms, stream bool
	}{
		{inside, "2026-01-01", "2027-01-01", true, true, false},
		{across, "2026-10-15", "", true, true, false},
		{before, "2026-01-01", "2026-10-01", true, true, false},
		{inverted, "2026-11-01", "2026-10-01", true, true, false},
		{state, "", "", false, false, true},
	}
	for _, p := range pms {
		addMethod(t, db, p.id, p.from, p.until, p.active, p.terms, p.stream)
		addUsage(t, db, use{granularity: "month", date: october, meter: "encode", solution: "Encoding", qty: 1, cost: "10",
			currency: "USD", pm: p.id, project: "alpha"})
	}
	addUsage(t, db, use{granularity: "month", date: october, meter: "egress", solution: "Streaming", qty: 1, cost: "7",
		currency: "USD", pm: state, project: "alpha"})
	execSQL(t, db, `INSERT INTO fetch_windows (granularity, basis, scope, start, "end", rows, run_id, fetched_at)
		VALUES ('month', 'usage', 'all', DATE '2026-10-01', DATE '2026-11-01', 6, CAST(? AS UUID), ?)`, runID, now)

	p := reports.Period{Month: october, Basis: tally.BasisUsage, Granularity: tally.Month}
	f, path := buildPeriod(t, db, p, reports.Options{})
	fl := flagRows(t, f)
	type key struct{ kind, subject string }
	got := map[key]string{}
	for _, r := range fl[1:] {
		k := key{at(r, colOf(t, fl[0], "Kind")), at(r, colOf(t, fl[0], "Subject"))}
		if k.kind == "No rate card price" || k.kind == "" {
			continue
		}
		if _, dup := got[k]; dup && k.kind != "Payment method not in a billable state" {
			t.Errorf("flag %v listed twice", k)
		}
		got[k] += at(r, colOf(t, fl[0], "Amount")) + ";"
	}
	want := map[key]string{
		{"Validity cannot be told at this granularity", across}: "10;",
		{"Payment method outside its validity", before}:         "10;",
		{"Payment method outside its validity", inverted}:       "10;",
		{"Payment method not in a billable state", inverted}:    "10;",
		{"Payment method not in a billable state", state}:       "17;17;", // inactive, terms not accepted
		{"Streaming billed through monthly charges", state}:     "7;",
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("flag %v: usage values %q, want %q", k, got[k], w)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("unexpected flag %v (%s)", k, got[k])
		}
	}
	if n := len(find(t, fl, map[string]string{"Kind": "Payment method outside its validity", "Subject": across})); n != 0 {
		t.Errorf("the straddling bucket is counted as a violation")
	}

	// The view says the same, with violation false for what it cannot tell.
	// The test database has no views: the query carries them (Inline).
	q, err := tallysql.Inline(`SELECT payment_method, problem, violation, CAST(cost AS DOUBLE)
FROM payment_method_violations ORDER BY payment_method, problem`)
	if err != nil {
		t.Fatal(err)
	}
	view := querySQL(t, db, q)
	wantView := [][]string{
		{across, "cannot tell at this granularity", "false", "10"},
		{before, "on or after end", "true", "10"},
		{inverted, "before start", "true", "10"},
		{inverted, "end not after start", "true", "10"},
		{state, "inactive", "true", "17"},
		{state, "terms not accepted", "true", "17"},
	}
	if len(view) != len(wantView) {
		t.Fatalf("payment_method_violations:\n%q\nwant\n%q", view, wantView)
	}
	for i := range view {
		for j := range wantView[i] {
			if view[i][j] != wantView[i][j] {
				t.Errorf("payment_method_violations row %d: %q, want %q", i, view[i], wantView[i])
				break
			}
		}
	}

	// At day granularity the same validity is told day by day: no
	// "cannot tell", the days before the 15th outside it.
	for d := 1; d <= 31; d++ {
		addUsage(t, db, use{date: day(d), meter: "encode", qty: 1, cost: "1", currency: "USD", pm: across, project: "alpha"})
	}
	p.Granularity = tally.Day
	if err := reports.WriteFile(context.Background(), db, p, path, reports.Options{Now: func() time.Time { return now }}); err != nil {
		t.Fatal(err)
	}
	g, err := excelize.OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	fl = flagRows(t, g)
	if n := len(find(t, fl, map[string]string{"Kind": "Validity cannot be told at this granularity"})); n != 0 {
		t.Errorf("day buckets flagged as undecidable %d times", n)
	}
	r := one(t, fl, map[string]string{"Kind": "Payment method outside its validity", "Subject": across})
	if got := at(r, colOf(t, fl[0], "Rows")); got != "14" {
		t.Errorf("%s rows outside the validity at day granularity, want 14 (1-14 October)", got)
	}
}

// A workbook of basis estimated flags its rows' payment methods as the
// usage basis does: the Flags sheet takes the month's rows by the same
// rule as every other sheet (in_report_month), by the day used. (Its
// validity flags once took rows for basis usage and reported only, and an
// estimated month's inactive method went unflagged.)
func TestValidityFlagsOnEveryBasis(t *testing.T) {
	const state = "aaaaaaaa-0000-4000-8000-000000000005" // inactive, terms not accepted
	for _, basis := range []tally.Basis{tally.BasisUsage, tally.BasisEstimated, tally.BasisReported} {
		t.Run(string(basis), func(t *testing.T) {
			db := openDB(t)
			addMethod(t, db, state, "", "", false, false, false)
			processed := day(20)
			addUsage(t, db, use{basis: string(basis), granularity: "day", date: day(3), processed: &processed, meter: "encode",
				qty: 1, cost: "12.5", currency: "USD", pm: state, project: "alpha"})
			// A row of the month before, charged in it: no flag of this month.
			addUsage(t, db, use{basis: string(basis), granularity: "day", date: day(3).AddDate(0, -1, 0), meter: "encode",
				qty: 1, cost: "99", currency: "USD", pm: state, project: "alpha"})
			f, _ := buildPeriod(t, db, reports.Period{Month: october, Basis: basis, Granularity: tally.Day}, reports.Options{})
			fl := flagRows(t, f)
			got := find(t, fl, map[string]string{"Kind": "Payment method not in a billable state", "Subject": state})
			if len(got) != 2 { // inactive, terms not accepted
				t.Fatalf("basis %s: %d flags of the inactive method, want 2:\n%q", basis, len(got), fl)
			}
			for _, r := range got {
				if a := at(r, colOf(t, fl[0], "Amount")); a != "12.5" {
					t.Errorf("basis %s: flag amount %q, want 12.5 (this month's row only)", basis, a)
				}
			}
		})
	}
}

// addMethod stores a direct payment method, valid from..until ("" for
// open), in a snapshot of 2026-09-01.
func addMethod(t *testing.T, db *sql.DB, id, from, until string, active, terms, stream bool) {
	t.Helper()
	execSQL(t, db, `INSERT INTO payment_method_snapshots (snapshot_at, run_id, id, display_name, type, start_date, end_date,
		is_active, terms_and_conditions_accepted, auto_purchase_stream_licenses)
		VALUES (?, CAST(? AS UUID), ?, ?, 'direct', CAST(? AS DATE), CAST(? AS DATE), ?, ?, ?)`,
		time.Date(2026, 9, 1, 0, 0, 0, 0, time.UTC), runID, id, "pm "+id[len(id)-1:], nullable(from), nullable(until), active, terms, stream)
}
