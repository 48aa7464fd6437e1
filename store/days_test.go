package store

import (
	"context"
	"database/sql"
	"fmt"
	"testing"
	"time"

	"github.com/tally-dev/tally"
)

// TestDayRangeGivesWhatTheWholeHistoryGives: forecasts and anomalies read
// for the days DayRange names are those the views give over every day,
// on a history of several months with a spike, a quiet project, a partial
// last day and a month held at day granularity.
func TestDayRangeGivesWhatTheWholeHistoryGives(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	load1 := func(g tally.Granularity, start, end string, rows []tally.MeterData) {
		load(t, s, tally.UsageQuery{Window: window(t, g, start, end)}, rows...)
	}
	var rows []tally.MeterData
	first, last := date(t, "2026-06-01"), date(t, "2026-09-18") // the 18th holds two hours only
	for d := first; d.Before(last.AddDate(0, 0, 1)); d = d.AddDate(0, 0, 1) {
		hours := 24
		if d.Equal(last) {
			hours = 2
		}
		for h := 0; h < hours; h++ {
			at := d.Add(time.Duration(h) * time.Hour)
			cost := fmt.Sprintf("%d.%03d", 1+d.Day()%3, h*7%1000)
			if d.Equal(date(t, "2026-08-20")) {
				cost = "40.5"
			}
			rows = append(rows, row(at, "encoding", "alpha", cost))
			if d.Weekday() != time.Sunday {
				rows = append(rows, row(at, "storage", "beta", "0.125"))
			}
		}
	}
	var june, rest []tally.MeterData
	for _, r := range rows {
		if r.Date.Before(date(t, "2026-07-01")) {
			june = append(june, r)
		} else {
			rest = append(rest, r)
		}
	}
	// June at day granularity, the rest hourly.
	var juneDays []tally.MeterData
	byDay := map[string]int{}
	for _, r := range june {
		k := r.Date.Format("2006-01-02") + r.MeterName
		if i, ok := byDay[k]; ok {
			juneDays[i].Cost = juneDays[i].Cost.Add(r.Cost)
			continue
		}
		r.Date = r.Date.Truncate(24 * time.Hour)
		byDay[k] = len(juneDays)
		juneDays = append(juneDays, r)
	}
	load1(tally.Day, "2026-06-01", "2026-07-01", juneDays)
	var july, later []tally.MeterData
	for _, r := range rest {
		if r.Date.Before(date(t, "2026-08-01")) {
			july = append(july, r)
		} else {
			later = append(later, r)
		}
	}
	load1(tally.Hour, "2026-07-01", "2026-08-01", july)
	var aug, sep []tally.MeterData
	for _, r := range later {
		if r.Date.Before(date(t, "2026-08-31")) {
			aug = append(aug, r)
		} else {
			sep = append(sep, r)
		}
	}
	load1(tally.Hour, "2026-08-01", "2026-08-31", aug)
	load1(tally.Hour, "2026-08-31", "2026-09-19", sep)

	all := func(query string, args ...any) []string {
		t.Helper()
		r, err := s.db.QueryContext(ctx, query, args...)
		if err != nil {
			t.Fatal(err)
		}
		return lines(t, r)
	}
	days := func(query string, from, to time.Time, args ...any) []string {
		t.Helper()
		r, err := queryDays(ctx, s.db, query, from, to, args...)
		if err != nil {
			t.Fatal(err)
		}
		return lines(t, r)
	}
	const fc = `SELECT month, scope_kind, scope, currency, as_of, actual_cost, cost_to_as_of, forecast_days, forecast_cost
FROM forecasts WHERE month = CAST($m AS DATE) ORDER BY ALL`
	const fd = `SELECT * FROM forecast_days WHERE month = CAST($m AS DATE) ORDER BY ALL`
	const an = `SELECT * FROM anomalies WHERE day >= CAST($m AS DATE) AND day < CAST($m AS DATE) + INTERVAL 1 MONTH ORDER BY ALL`
	for _, m := range []string{"2026-06-01", "2026-07-01", "2026-08-01", "2026-09-01", "2026-10-01"} {
		from := date(t, m)
		to := from.AddDate(0, 1, 0)
		for _, q := range []string{fc, fd, an} {
			want := all(q, sql.Named("m", from))
			got := days(q, from, to, sql.Named("m", from))
			equalLines(t, m+": "+q, got, want)
			if m == "2026-08-01" && q == an && len(want) == 0 {
				t.Fatal("the fixture's spike on 2026-08-20 is no anomaly: the test compares nothing")
			}
			if m == "2026-09-01" && q == fc && len(want) == 0 {
				t.Fatal("no forecast for the current month: the test compares nothing")
			}
		}
	}
	// The alert checks' own reads.
	fs, err := s.CurrentForecasts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(fs) == 0 || !fs[0].Month.Equal(date(t, "2026-09-01")) || !fs[0].AsOf.Equal(date(t, "2026-09-17")) {
		t.Fatalf("current forecasts: %+v, want September's as of 2026-09-17", fs)
	}
	want := all(`SELECT count(*) FROM forecasts WHERE month = '2026-09-01'`)
	if fmt.Sprint(len(fs)) != want[0] {
		t.Fatalf("current forecasts: %d, the view has %s", len(fs), want[0])
	}
	an2, err := s.Anomalies(ctx, date(t, "2026-08-01"))
	if err != nil {
		t.Fatal(err)
	}
	if got := all(`SELECT count(*) FROM anomalies WHERE day >= '2026-08-01'`); fmt.Sprint(len(an2)) != got[0] || len(an2) == 0 {
		t.Fatalf("anomalies since August: %d, the view has %s", len(an2), got[0])
	}
}

// lines renders every row of r as one line of its columns' text.
func lines(t *testing.T, r *sql.Rows) []string {
	t.Helper()
	defer r.Close()
	cols, err := r.Columns()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for r.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := r.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprint(vals...))
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
