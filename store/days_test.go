package store

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/tally-dev/tally"
	tallysql "github.com/tally-dev/tally/sql"
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
	// Read from the days daily_usage_cost keeps, and from the usage rows
	// of those days, as on a copy whose table is listed to fill.
	// And, first, the anomalies' baselines from daily_baselines; then, as
	// while a load's days wait in baseline_dirty, the days' cost alone.
	for mode, setup := range []string{"", `INSERT INTO baseline_dirty VALUES ('', DATE '2026-08-01', DATE '2026-08-02')`,
		`INSERT INTO kept_refills VALUES ('daily_usage_cost', NULL)`} {
		kept := mode < 2
		if setup != "" {
			if _, err := s.db.ExecContext(ctx, setup); err != nil {
				t.Fatal(err)
			}
		}
		if got, err := DayCostKept(ctx, s.db); err != nil || got != kept {
			t.Fatalf("DayCostKept = %v, %v; want %v", got, err, kept)
		}
		if got, err := BaselinesKept(ctx, s.db); err != nil || got != (mode == 0) {
			t.Fatalf("BaselinesKept = %v, %v; want %v", got, err, mode == 0)
		}
		for _, m := range []string{"2026-06-01", "2026-07-01", "2026-08-01", "2026-09-01", "2026-10-01"} {
			from := date(t, m)
			to := from.AddDate(0, 1, 0)
			for _, q := range []string{fc, fd, an} {
				want := all(q, sql.Named("m", from))
				got := days(q, from, to, sql.Named("m", from))
				equalLines(t, fmt.Sprintf("%s (kept %v): %s", m, kept, q), got, want)
				if m == "2026-08-01" && q == an && len(want) == 0 {
					t.Fatal("the fixture's spike on 2026-08-20 is no anomaly: the test compares nothing")
				}
				if m == "2026-09-01" && q == fc && len(want) == 0 {
					t.Fatal("no forecast for the current month: the test compares nothing")
				}
			}
		}
	}
	for _, q := range []string{`DELETE FROM kept_refills`, `DELETE FROM baseline_dirty`} {
		if _, err := s.db.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	// The alert checks' own reads.
	fs, err := s.CurrentForecasts(ctx, time.Time{})
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
	// A replay's connection (AsOfConn) reads its days as DayRange names
	// them too: the replay day's month from its first day and the 28
	// days before, though the data runs weeks later, and its budgets are
	// that month's, as of the day before it.
	const current = `SELECT month, scope_kind, scope, currency, as_of, last_usage_day, last_fetched_day, actual_cost, forecast_cost
FROM forecasts WHERE month = CAST(date_trunc('month', as_of + 1) AS DATE) ORDER BY ALL`
	for _, replay := range []string{"2026-08-15", "2026-09-01", "2026-07-03"} {
		day := date(t, replay)
		month := time.Date(day.Year(), day.Month(), 1, 0, 0, 0, 0, time.UTC)
		conn, release, err := s.AsOfConn(ctx, day)
		if err != nil {
			t.Fatal(err)
		}
		onConn := func(query string, args ...any) []string {
			t.Helper()
			r, err := conn.QueryContext(ctx, query, args...)
			if err != nil {
				t.Fatal(err)
			}
			return lines(t, r)
		}
		daysOnConn := func(query string, from, to time.Time, args ...any) []string {
			t.Helper()
			r, err := queryDays(ctx, conn, query, from, to, args...)
			if err != nil {
				t.Fatal(err)
			}
			return lines(t, r)
		}
		for _, m := range []time.Time{month.AddDate(0, -1, 0), month} {
			for _, q := range []string{fc, fd} {
				equalLines(t, fmt.Sprintf("as of %s, %s: %s", replay, m.Format("2006-01"), q),
					daysOnConn(q, m, m.AddDate(0, 1, 0), sql.Named("m", m)), onConn(q, sql.Named("m", m)))
			}
		}
		equalLines(t, "as of "+replay+": "+current, daysOnConn(current, farFuture, farFuture), onConn(current))
		release()
		fs, err := s.CurrentForecasts(ctx, day)
		if err != nil {
			t.Fatal(err)
		}
		before := day.AddDate(0, 0, -1)
		if len(fs) == 0 || !fs[0].Month.Equal(month) || !fs[0].AsOf.Equal(before) || !fs[0].Through.LastUsageDay.Equal(before) || !fs[0].Through.LastFetchedDay.Equal(before) {
			t.Fatalf("current forecasts as of %s: %+v, want %s's as of %s, through %s", replay, fs, month.Format("2006-01"), before.Format(tally.DateLayout), before.Format(tally.DateLayout))
		}
	}
	// The replays' connections went back to the pool without their day.
	if fs, err := s.CurrentForecasts(ctx, time.Time{}); err != nil || len(fs) == 0 || !fs[0].AsOf.Equal(date(t, "2026-09-17")) {
		t.Fatalf("current forecasts after the replays: %+v, %v; want as of 2026-09-17", fs, err)
	}
	// The table the load keeps holds what usage_day_cost gives from the
	// usage rows, also after loads that change which granularity counts:
	// a month window over the day-granularity June (the days stay, June
	// is wholly covered by them), and July again at day granularity for a
	// week (those days now count hourly still: hour is finer).
	load1(tally.Month, "2026-06-01", "2026-07-01", []tally.MeterData{row(date(t, "2026-06-01"), "encoding", "alpha", "999")})
	var week []tally.MeterData
	for _, r := range juneDays[:5] {
		r.Date = r.Date.AddDate(0, 1, 0)
		week = append(week, r)
	}
	load1(tally.Day, "2026-07-01", "2026-07-08", week)
	const kept = `SELECT day, project, payment_method, family, meter_name, currency, cost FROM daily_usage_cost ORDER BY ALL`
	inlined, err := tallysql.Inline(`SELECT day, project, payment_method, family, meter_name, currency, cost FROM usage_day_cost ORDER BY ALL`)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := all(kept), all(inlined); len(want) < 100 {
		t.Fatalf("usage_day_cost has %d rows; the fixture holds more", len(want))
	} else {
		equalLines(t, "daily_usage_cost against usage_day_cost from the rows", got, want)
	}
	an2, err := s.Anomalies(ctx, date(t, "2026-08-01"))
	if err != nil {
		t.Fatal(err)
	}
	if got := all(`SELECT count(*) FROM anomalies WHERE day >= '2026-08-01'`); fmt.Sprint(len(an2)) != got[0] || len(an2) == 0 {
		t.Fatalf("anomalies since August: %d, the view has %s", len(an2), got[0])
	}
}

// viewLines is every row of a view, in order, as lines.
func viewLines(t *testing.T, s *Store, view string) []string {
	t.Helper()
	r, err := s.db.QueryContext(context.Background(), `SELECT * FROM `+view+` ORDER BY ALL`)
	if err != nil {
		t.Fatal(err)
	}
	return lines(t, r)
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

// A store an older Tally loaded gets daily_usage_cost filled as it is
// migrated, with what usage_day_cost gives from its rows.
func TestMigrationFillsDailyUsageCost(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "tally.duckdb")
	old := olderStore(t, path, dailyCostVersion,
		`INSERT INTO fetch_windows (granularity, basis, scope, start, "end", rows, run_id, fetched_at)
         VALUES ('hour', 'usage', 'all', DATE '2026-03-01', DATE '2026-03-04', 6, uuidv7(), now()::TIMESTAMP)`,
		`INSERT INTO usage (granularity, basis, date, meter_name, quantity, cost, currency, project, payment_method, family, run_id, fetched_at)
         SELECT 'hour', 'usage', TIMESTAMP '2026-03-01' + to_hours(h * 11), 'encoding', 1, CAST(h AS DECIMAL(38, 12)) / 8, 'USD',
                CASE WHEN h % 2 = 0 THEN 'alpha' END, 'pm-1', 'fam', uuidv7(), now()::TIMESTAMP
         FROM range(6) r(h)`,
	)
	old.Close()
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	inlined, err := tallysql.Inline(`SELECT CAST(day AS VARCHAR) || ' ' || coalesce(project, '-') || ' ' || CAST(cost AS VARCHAR) FROM usage_day_cost ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	r, err := s.DB().QueryContext(ctx, inlined)
	if err != nil {
		t.Fatal(err)
	}
	want := lines(t, r)
	r, err = s.DB().QueryContext(ctx, `SELECT CAST(day AS VARCHAR) || ' ' || coalesce(project, '-') || ' ' || CAST(cost AS VARCHAR) FROM usage_day_cost ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	got := lines(t, r)
	if len(want) != 5 {
		t.Fatalf("usage_day_cost from the rows: %q; the fixture has 5 project-days", want)
	}
	equalLines(t, "usage_day_cost after the migration", got, want)
	if n := count(t, s, `SELECT count(*) FROM daily_usage_cost`); n != 5 {
		t.Fatalf("daily_usage_cost holds %d rows, want 5", n)
	}
}
