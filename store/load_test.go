package store

import (
	"context"
	"fmt"
	"iter"
	"math/big"
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/tally-dev/tally"
)

// randomCost is an exact cost with 3 to 12 decimals and up to 14 integer
// digits, sometimes negative (credits): values a float would round.
func randomCost(r *rand.Rand) tally.Decimal {
	v := big.NewInt(r.Int64N(100_000_000_000_000_000))
	if r.IntN(10) == 0 {
		v.Neg(v)
	}
	return tally.NewDecimal(v, 3+r.IntN(10))
}

func TestLoadWindowSumsExactly(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	r := rand.New(rand.NewPCG(1, 2))
	w := window(t, tally.Hour, "2026-03-01", "2026-04-01")
	var rows []tally.MeterData
	byProject := map[string][]tally.Decimal{}
	var all []tally.Decimal
	for i := range 5000 {
		md := row(w.Start.Add(time.Duration(r.IntN(31*24))*time.Hour), fmt.Sprintf("meter-%d", i%7), fmt.Sprintf("p%d", i%3), "0")
		md.Cost = randomCost(r)
		rows = append(rows, md)
		byProject[md.Project] = append(byProject[md.Project], md.Cost)
		all = append(all, md.Cost)
	}
	res := load(t, s, tally.UsageQuery{Window: w}, rows...)
	if res.Rows != 5000 || res.Replaced != 0 {
		t.Fatalf("result %+v, want 5000 rows and none replaced", res)
	}
	want := decimalSum(all...)
	got := mustDecimal(t, scalar(t, s, `SELECT sum(cost) FROM usage`))
	if got.Cmp(want) != 0 {
		t.Fatalf("sum(cost) = %s, want %s", got, want)
	}
	// A float sum of the same rows is off: the test data would catch a float
	// anywhere on the way in.
	var f float64
	for _, d := range all {
		f += d.Float64()
	}
	if fmt.Sprintf("%.12f", f) == want.String() {
		t.Fatalf("test data too tame: float sum %f matches", f)
	}
	for p, costs := range byProject {
		got := mustDecimal(t, scalar(t, s, `SELECT sum(cost) FROM usage WHERE project = ?`, p))
		if want := decimalSum(costs...); got.Cmp(want) != 0 {
			t.Errorf("project %s: sum %s, want %s", p, got, want)
		}
	}
	// Each row's cost survives the trip unchanged.
	q, err := s.Query(ctx, `SELECT cost FROM usage ORDER BY cost`)
	if err != nil {
		t.Fatal(err)
	}
	if len(q.Rows) != len(all) {
		t.Fatalf("%d rows back, want %d", len(q.Rows), len(all))
	}
	min := all[0]
	for _, d := range all {
		if d.Cmp(min) < 0 {
			min = d
		}
	}
	if got := mustDecimal(t, q.Rows[0][0]); got.Cmp(min) != 0 {
		t.Fatalf("smallest cost %s, want %s", got, min)
	}
}

func TestLoadWindowReplaces(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	w := window(t, tally.Day, "2026-01-01", "2026-02-01")
	q := tally.UsageQuery{Window: w}
	before := window(t, tally.Day, "2025-12-01", "2026-01-01")
	load(t, s, tally.UsageQuery{Window: before}, row(date(t, "2025-12-31"), "enc", "a", "9.99"))

	first := []tally.MeterData{
		row(date(t, "2026-01-01"), "enc", "a", "1.000000000001"),
		row(date(t, "2026-01-31"), "enc", "b", "2"),
		row(date(t, "2026-01-15"), "egress", "a", "3.5"),
	}
	load(t, s, q, first...)
	second := []tally.MeterData{
		row(date(t, "2026-01-02"), "enc", "a", "10"),
		row(date(t, "2026-01-31"), "egress", "c", "0.000000000007"),
	}
	second[1].DateProcessed = ptr(date(t, "2026-02-03"))
	second[1].Price = nil
	second[1].Entitlement = "0f8fad5b-d9cb-469f-a165-70867728950e"
	second[1].EntitlementType = "license"
	res := load(t, s, q, second...)
	if res.Rows != 2 || res.Replaced != 3 {
		t.Fatalf("result %+v, want 2 rows replacing 3", res)
	}
	got := dump(t, s)
	want := []string{
		"day|usage|2025-12-31T00:00:00Z|NULL|enc|sku-enc|fam|sol|minutes|4|0.25|9.990000000000|USD|NULL|NULL|pm-a|PM a|a|",
		"day|usage|2026-01-02T00:00:00Z|NULL|enc|sku-enc|fam|sol|minutes|4|0.25|10.000000000000|USD|NULL|NULL|pm-a|PM a|a|",
		"day|usage|2026-01-31T00:00:00Z|2026-02-03T00:00:00Z|egress|sku-egress|fam|sol|minutes|4|NULL|0.000000000007|USD|0f8fad5b-d9cb-469f-a165-70867728950e|license|pm-c|PM c|c|",
	}
	equalLines(t, "usage after the second load", got, want)

	// Loading the same rows again changes nothing but run and fetch time.
	res = load(t, s, q, second...)
	if res.Replaced != 2 {
		t.Fatalf("identical reload replaced %d rows, want 2", res.Replaced)
	}
	equalLines(t, "usage after an identical reload", dump(t, s), want)
	equalLines(t, "ledger", ledger(t, s), []string{
		"day usage all 2025-12-01 2026-01-01 1",
		"day usage all 2026-01-01 2026-02-01 2",
	})

	// Another granularity and basis over the same dates are other rows.
	load(t, s, tally.UsageQuery{Window: window(t, tally.Month, "2026-01-01", "2026-02-01")}, row(date(t, "2026-01-01"), "enc", "a", "12"))
	load(t, s, q) // an empty answer empties the window
	if n := count(t, s, `SELECT count(*) FROM usage WHERE granularity = 'day' AND date >= '2026-01-01'`); n != 0 {
		t.Fatalf("%d day rows left in the emptied window", n)
	}
	if n := count(t, s, `SELECT count(*) FROM usage WHERE granularity = 'month'`); n != 1 {
		t.Fatalf("%d month rows, want 1", n)
	}
	lw, err := s.Ledger(ctx, "", tally.Day, tally.BasisUsage, "all")
	if err != nil {
		t.Fatal(err)
	}
	if len(lw) != 2 || lw[1].Window != w {
		t.Fatalf("ledger %+v, want the emptied window recorded", lw)
	}
}

func ptr[T any](v T) *T { return &v }

func TestLoadWindowScopedReplace(t *testing.T) {
	w := window(t, tally.Day, "2026-01-01", "2026-01-08")
	d := date(t, "2026-01-03")
	base := []tally.MeterData{
		row(d, "enc", "a", "1"), row(d, "egress", "a", "2"),
		row(d, "enc", "b", "3"), row(d, "egress", "b", "4"),
		row(d, "enc", "c", "5"),
	}
	for _, tc := range []struct {
		name  string
		q     tally.UsageQuery
		rows  []tally.MeterData
		scope string
		want  string // what each (meter, project) costs afterwards
	}{
		{
			name:  "projects",
			q:     tally.UsageQuery{Window: w, ProjectNames: []string{"b", "a"}},
			rows:  []tally.MeterData{row(d, "enc", "a", "10")},
			scope: "projects=a,b",
			want:  "enc a 10|enc c 5|",
		},
		{
			name:  "payment methods",
			q:     tally.UsageQuery{Window: w, PaymentMethodIDs: []string{"pm-b"}},
			rows:  []tally.MeterData{row(d, "enc", "b", "30"), row(d, "other", "b", "31")},
			scope: "payment_methods=pm-b",
			want:  "egress a 2|enc a 1|enc b 30|enc c 5|other b 31|",
		},
		{
			name:  "meters",
			q:     tally.UsageQuery{Window: w, MeterNames: []string{"egress"}},
			rows:  []tally.MeterData{row(d, "egress", "c", "40")},
			scope: "meters=egress",
			want:  "egress c 40|enc a 1|enc b 3|enc c 5|",
		},
		{
			name:  "projects and meters",
			q:     tally.UsageQuery{Window: w, ProjectNames: []string{"a"}, MeterNames: []string{"enc"}},
			rows:  nil,
			scope: "projects=a;meters=enc",
			want:  "egress a 2|egress b 4|enc b 3|enc c 5|",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := openTemp(t)
			load(t, s, tally.UsageQuery{Window: w}, base...)
			load(t, s, tc.q, tc.rows...)
			res, err := s.Query(context.Background(), `SELECT meter_name || ' ' || project || ' ' || cost::DECIMAL(10,0) || '|' FROM usage ORDER BY 1`)
			if err != nil {
				t.Fatal(err)
			}
			got := ""
			for _, r := range res.Rows {
				got += r[0].(string)
			}
			if got != tc.want {
				t.Fatalf("after the scoped load: %s, want %s", got, tc.want)
			}
			equalLines(t, "ledger", ledger(t, s), sortedLines(
				"day usage all 2026-01-01 2026-01-08 5",
				fmt.Sprintf("day usage %s 2026-01-01 2026-01-08 %d", tc.scope, len(tc.rows)),
			))
		})
	}
}

func sortedLines(lines ...string) []string {
	for i := range lines {
		for j := i + 1; j < len(lines); j++ {
			if lines[j] < lines[i] {
				lines[i], lines[j] = lines[j], lines[i]
			}
		}
	}
	return lines
}

func TestLoadWindowReportedBasis(t *testing.T) {
	s := openTemp(t)
	w := window(t, tally.Day, "2026-02-01", "2026-03-01")
	reported := func(sampled, charged, cost string) tally.MeterData {
		md := row(date(t, sampled), "enc", "a", cost)
		md.DateProcessed = ptr(date(t, charged))
		return md
	}
	q := tally.UsageQuery{Window: w, ReportedDate: true}
	// Charged in February, sampled in January: the reported basis may hold
	// usage from before the window.
	load(t, s, q, reported("2026-01-30", "2026-02-01", "1"), reported("2026-02-27", "2026-02-28", "2"))
	load(t, s, tally.UsageQuery{Window: window(t, tally.Day, "2026-03-01", "2026-04-01"), ReportedDate: true},
		reported("2026-02-28", "2026-03-01", "4"))
	// The usage basis over the same dates is separate.
	load(t, s, tally.UsageQuery{Window: w}, row(date(t, "2026-02-10"), "enc", "a", "8"))

	load(t, s, q, reported("2026-01-15", "2026-02-20", "16"))
	got := mustDecimal(t, scalar(t, s, `SELECT sum(cost) FROM usage WHERE basis = 'reported'`))
	if got.Cmp(tally.MustDecimal("20")) != 0 {
		t.Fatalf("reported sum %s, want 20 (16 + March's 4)", got)
	}
	if got := mustDecimal(t, scalar(t, s, `SELECT sum(cost) FROM usage WHERE basis = 'usage'`)); got.Cmp(tally.MustDecimal("8")) != 0 {
		t.Fatalf("usage sum %s, want 8", got)
	}
	lw, err := s.Ledger(context.Background(), "", tally.Day, tally.BasisReported, "all")
	if err != nil {
		t.Fatal(err)
	}
	if len(lw) != 2 || lw[0].Window != w {
		t.Fatalf("reported ledger %+v", lw)
	}

	// A reported row must say when it was charged, inside the window.
	_, err = s.LoadWindow(context.Background(), q, NewRunID(), rowsOf(row(date(t, "2026-02-02"), "enc", "a", "1")))
	mustContain(t, err, "date_processed is null")
	_, err = s.LoadWindow(context.Background(), q, NewRunID(), rowsOf(reported("2026-02-02", "2026-03-02", "1")))
	mustContain(t, err, "date_processed 2026-03-02T00:00:00Z is outside the window 2026-02-01..2026-03-01")
}

func TestLoadWindowFailuresRollBack(t *testing.T) {
	w := window(t, tally.Day, "2026-01-01", "2026-02-01")
	q := tally.UsageQuery{Window: w, ProjectNames: []string{"a"}}
	good := []tally.MeterData{row(date(t, "2026-01-05"), "enc", "a", "1.5"), row(date(t, "2026-01-06"), "enc", "a", "2.5")}
	many := make([]tally.MeterData, 5000)
	for i := range many {
		many[i] = row(date(t, "2026-01-07"), "enc", "a", "0.1")
	}
	for _, tc := range []struct {
		name  string
		rows  func(cancel context.CancelFunc) iter.Seq2[tally.MeterData, error]
		parts []string
	}{
		{
			name: "row after the window",
			rows: func(context.CancelFunc) iter.Seq2[tally.MeterData, error] {
				return rowsOf(good[0], row(date(t, "2026-02-01"), "egress", "a", "1"))
			},
			parts: []string{"2026-01-01..2026-02-01", `meter "egress"`, `project "a"`, "2026-02-01T00:00:00Z", "outside the window"},
		},
		{
			name: "row before the window",
			rows: func(context.CancelFunc) iter.Seq2[tally.MeterData, error] {
				return rowsOf(row(date(t, "2025-12-31"), "egress", "a", "1"))
			},
			parts: []string{"row 1", "2025-12-31T00:00:00Z", "outside the window"},
		},
		{
			name: "row outside the scope",
			rows: func(context.CancelFunc) iter.Seq2[tally.MeterData, error] {
				return rowsOf(good[0], row(date(t, "2026-01-09"), "enc", "b", "1"))
			},
			parts: []string{"row 2", `project "b" is not one of the query's projects (a)`},
		},
		{
			name: "13 decimals",
			rows: func(context.CancelFunc) iter.Seq2[tally.MeterData, error] {
				return rowsOf(good[0], row(date(t, "2026-01-09"), "enc", "a", "0.0000000000001"))
			},
			parts: []string{"row 2", `meter "enc"`, "0.0000000000001", "more than 12 decimal places"},
		},
		{
			name: "too large",
			rows: func(context.CancelFunc) iter.Seq2[tally.MeterData, error] {
				return rowsOf(row(date(t, "2026-01-09"), "enc", "a", "1e26"))
			},
			parts: []string{"row 1", "does not fit DECIMAL(38, 12)"},
		},
		{
			name: "iterator error midway",
			rows: func(context.CancelFunc) iter.Seq2[tally.MeterData, error] {
				return failingAfter(errBoom, many...)
			},
			parts: []string{"after 5000 rows", errBoom.Error()},
		},
		{
			name: "cancelled midway",
			rows: func(cancel context.CancelFunc) iter.Seq2[tally.MeterData, error] {
				return func(yield func(tally.MeterData, error) bool) {
					for i, md := range many {
						if i == 3000 {
							cancel()
						}
						if !yield(md, nil) {
							return
						}
					}
				}
			},
			parts: []string{"context canceled"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := openTemp(t)
			load(t, s, q, good...)
			load(t, s, tally.UsageQuery{Window: w}, append(good, row(date(t, "2026-01-05"), "enc", "b", "7"))...)
			load(t, s, q, good...)
			before, ledgerBefore := dump(t, s), ledger(t, s)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			_, err := s.LoadWindow(ctx, q, NewRunID(), tc.rows(cancel))
			mustContain(t, err, tc.parts...)
			equalLines(t, "usage", dump(t, s), before)
			equalLines(t, "ledger", ledger(t, s), ledgerBefore)
			// The store stays usable after the failure.
			load(t, s, q, good[0])
			if n := count(t, s, `SELECT count(*) FROM usage WHERE project = 'a'`); n != 1 {
				t.Fatalf("%d rows of project a after a good load, want 1", n)
			}
		})
	}
}

func TestLoadWindowRefusesBadWindows(t *testing.T) {
	s := openTemp(t)
	for _, w := range []tally.Window{
		{Start: date(t, "2026-01-02"), End: date(t, "2026-01-01"), Granularity: tally.Day},
		{Start: date(t, "2026-01-01"), End: date(t, "2026-01-02"), Granularity: "minute"},
		{Start: date(t, "2026-01-01").Add(time.Hour), End: date(t, "2026-01-02"), Granularity: tally.Hour},
	} {
		if _, err := s.LoadWindow(context.Background(), tally.UsageQuery{Window: w}, NewRunID(), rowsOf()); err == nil {
			t.Errorf("window %s (%s) accepted", w, w.Granularity)
		}
	}
}

func TestLoadWindowConcurrently(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	const windows, perWindow = 8, 2000
	start := date(t, "2026-01-01")
	// Something to replace in every window.
	for i := range windows {
		w := tally.Window{Start: start.AddDate(0, 0, 7*i), End: start.AddDate(0, 0, 7*i+7), Granularity: tally.Day}
		load(t, s, tally.UsageQuery{Window: w}, row(w.Start, "old", "a", "1"))
	}
	var wg sync.WaitGroup
	errs := make([]error, windows)
	for i := range windows {
		wg.Go(func() {
			w := tally.Window{Start: start.AddDate(0, 0, 7*i), End: start.AddDate(0, 0, 7*i+7), Granularity: tally.Day}
			rows := func(yield func(tally.MeterData, error) bool) {
				for j := range perWindow {
					if !yield(row(w.Start.AddDate(0, 0, j%7), fmt.Sprintf("m%d", j%5), fmt.Sprintf("w%d", i), "0.000000000001"), nil) {
						return
					}
				}
			}
			stats := &tally.Stats{}
			stats.Requests.Add(int64(i + 1))
			_, errs[i] = s.LoadWindow(ctx, tally.UsageQuery{Window: w, Stats: stats}, NewRunID(), rows)
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("window %d: %v", i, err)
		}
	}
	res, err := s.Query(ctx, `SELECT project, count(*), sum(cost), min(date)::DATE, max(date)::DATE FROM usage GROUP BY project ORDER BY project`)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Rows) != windows {
		t.Fatalf("%d projects, want %d (old rows left?)", len(res.Rows), windows)
	}
	for i, r := range res.Rows {
		w0 := start.AddDate(0, 0, 7*i)
		if r[0] != fmt.Sprintf("w%d", i) || r[1] != int64(perWindow) ||
			mustDecimal(t, r[2]).Cmp(tally.MustDecimal("0.000000002")) != 0 ||
			!r[3].(time.Time).Equal(w0) || !r[4].(time.Time).Equal(w0.AddDate(0, 0, 6)) {
			t.Errorf("window %d: %v", i, r)
		}
	}
	res, err = s.Query(ctx, `SELECT start, rows, requests FROM fetch_windows ORDER BY start`)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Rows) != windows {
		t.Fatalf("ledger has %d windows, want %d", len(res.Rows), windows)
	}
	for i, r := range res.Rows {
		if r[1] != int64(perWindow) || r[2] != int32(i+1) {
			t.Errorf("ledger window %d: %v", i, r)
		}
	}
}

// TestLoadWindowStreams loads 200,000 generated rows and checks that the Go
// heap does not grow with them: rows must stream through, not pile up.
func TestLoadWindowStreams(t *testing.T) {
	s := openTemp(t)
	const n = 200_000
	w := window(t, tally.Hour, "2026-01-01", "2026-02-01")
	var early, late uint64
	heap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	rows := func(yield func(tally.MeterData, error) bool) {
		for i := range n {
			switch i {
			case 20_000:
				early = heap()
			case n - 1:
				late = heap()
			}
			md := row(w.Start.Add(time.Duration(i%(31*24))*time.Hour), fmt.Sprintf("meter-%d", i%40), fmt.Sprintf("project-%d", i%25), "0.123456789012")
			if !yield(md, nil) {
				return
			}
		}
	}
	res, err := s.LoadWindow(context.Background(), tally.UsageQuery{Window: w}, NewRunID(), rows)
	if err != nil {
		t.Fatal(err)
	}
	if res.Rows != n {
		t.Fatalf("loaded %d rows, want %d", res.Rows, n)
	}
	if got := mustDecimal(t, scalar(t, s, `SELECT sum(cost) FROM usage`)); got.Cmp(tally.MustDecimal("24691.3578024")) != 0 {
		t.Fatalf("sum %s", got)
	}
	// 180,000 retained rows would be tens of megabytes.
	if late > early+8<<20 {
		t.Fatalf("heap grew from %d to %d bytes while streaming", early, late)
	}
}

// TestLoadWindowCutsOverlappedLedgerEntries loads windows that overlap
// loaded ones in part, as a nightly lookback does: the ledger keeps each day
// once and its row counts add up to the table's.
func TestLoadWindowCutsOverlappedLedgerEntries(t *testing.T) {
	s := openTemp(t)
	d := func(v string) time.Time { return date(t, v) }
	q := func(start, end string) tally.UsageQuery {
		return tally.UsageQuery{Window: window(t, tally.Day, start, end)}
	}
	load(t, s, q("2026-01-01", "2026-01-08"), row(d("2026-01-01"), "enc", "a", "1"), row(d("2026-01-02"), "enc", "a", "1"),
		row(d("2026-01-06"), "enc", "a", "1"), row(d("2026-01-07"), "enc", "a", "1"))
	other := tally.UsageQuery{Window: window(t, tally.Day, "2026-01-01", "2026-01-08"), ProjectNames: []string{"b"}}
	load(t, s, other, row(d("2026-01-04"), "enc", "b", "1"))
	load(t, s, q("2026-01-06", "2026-01-10"), row(d("2026-01-06"), "enc", "a", "2"), row(d("2026-01-09"), "enc", "a", "2"))
	equalLines(t, "ledger after a lookback", ledger(t, s), []string{
		"day usage all 2026-01-01 2026-01-06 3", // the rows of 1, 2 and (scope all holds every project) 4 January
		"day usage all 2026-01-06 2026-01-10 2",
		"day usage projects=b 2026-01-01 2026-01-08 1", // another scope: untouched
	})
	// A window inside a loaded one splits it in two.
	load(t, s, q("2026-01-02", "2026-01-03"))
	equalLines(t, "ledger after a window inside another", ledger(t, s), []string{
		"day usage all 2026-01-01 2026-01-02 1",
		"day usage all 2026-01-02 2026-01-03 0",
		"day usage all 2026-01-03 2026-01-06 1",
		"day usage all 2026-01-06 2026-01-10 2",
		"day usage projects=b 2026-01-01 2026-01-08 1",
	})
	if n, l := count(t, s, `SELECT count(*) FROM usage`), count(t, s, `SELECT sum(rows)::BIGINT FROM fetch_windows WHERE scope = 'all'`); n != 4 || l != n {
		t.Fatalf("%d usage rows, the ledger says %d; want 4", n, l)
	}
}

func TestLedger(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	for _, w := range [][2]string{
		{"2026-01-01", "2026-01-08"}, {"2026-01-08", "2026-01-15"}, {"2026-01-15", "2026-01-22"}, {"2026-02-01", "2026-02-08"},
	} {
		load(t, s, tally.UsageQuery{Window: window(t, tally.Day, w[0], w[1])})
	}
	load(t, s, tally.UsageQuery{Window: window(t, tally.Day, "2026-01-01", "2026-01-08"), ProjectNames: []string{"a"}})
	load(t, s, tally.UsageQuery{Window: window(t, tally.Day, "2026-01-01", "2026-01-08"), ReportedDate: true})
	// Replaces the two windows wholly inside it, cuts back the one it
	// overlaps.
	load(t, s, tally.UsageQuery{Window: window(t, tally.Day, "2026-01-05", "2026-01-22")})

	got, err := s.Ledger(ctx, "", tally.Day, tally.BasisUsage, "all")
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, lw := range got {
		if lw.Granularity != tally.Day || lw.FetchedAt.IsZero() || time.Since(lw.FetchedAt) > time.Hour {
			t.Errorf("window %+v", lw)
		}
		lines = append(lines, lw.String())
	}
	equalLines(t, "ledger", lines, []string{"2026-01-01..2026-01-05", "2026-01-05..2026-01-22", "2026-02-01..2026-02-08"})
	for _, tc := range []struct {
		basis tally.Basis
		scope string
		want  int
	}{{tally.BasisUsage, "projects=a", 1}, {tally.BasisReported, "all", 1}, {tally.BasisUsage, "projects=b", 0}} {
		got, err := s.Ledger(ctx, "", tally.Day, tc.basis, tc.scope)
		if err != nil || len(got) != tc.want {
			t.Errorf("%s %s: %d windows (%v), want %d", tc.basis, tc.scope, len(got), err, tc.want)
		}
	}
	if got, _ := s.Ledger(ctx, "", tally.Hour, tally.BasisUsage, "all"); len(got) != 0 {
		t.Errorf("hour ledger has %d windows, want none", len(got))
	}
}
