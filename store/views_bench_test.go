package store

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/tally-dev/tally"
	"github.com/tally-dev/tally/fetch/sim"
)

// benchStore loads a year of the simulated organization's hourly usage,
// one window a month, and one reference snapshot.
func benchStore(b *testing.B) (*Store, int64) {
	b.Helper()
	start := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	srv := sim.New(sim.Options{Seed: 11, Start: start, Now: func() time.Time { return start.AddDate(1, 0, 0) }})
	s, err := Open(context.Background(), filepath.Join(b.TempDir(), "tally.duckdb"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	var rows int64
	for m := start; m.Before(start.AddDate(1, 0, 0)); m = m.AddDate(0, 1, 0) {
		q := tally.UsageQuery{Window: tally.Window{Start: m, End: m.AddDate(0, 1, 0), Granularity: tally.Hour}}
		res, err := s.LoadWindow(context.Background(), q, NewRunID(), rowsOf(srv.Rows(q)...))
		if err != nil {
			b.Fatal(err)
		}
		rows += res.Rows
	}
	return s, rows
}

// BenchmarkAnalystViews measures the views that sum usage_finest over a
// year of hourly usage (benchStore), then with every row copied 15 times
// more (about two million rows): a month total per currency, the monthly
// cost per project, the payment method violations, and the forecasts and
// anomalies every alert check reads.
//
//	go test ./store -run '^$' -bench AnalystViews -benchtime 5x
func BenchmarkAnalystViews(b *testing.B) {
	s, rows := benchStore(b)
	for _, copies := range []int{1, 16} {
		if copies > 1 {
			for n := int64(1); n < int64(copies); n *= 2 {
				if _, err := s.DB().ExecContext(context.Background(), `INSERT INTO usage SELECT * FROM usage`); err != nil {
					b.Fatal(err)
				}
			}
			// Rows copied by hand: the daily costs and totals the load
			// keeps are recomputed for them.
			if err := s.RefreshDayCost(context.Background(), time.Time{}, farFuture); err != nil {
				b.Fatal(err)
			}
			if err := s.RefreshDayTotals(context.Background()); err != nil {
				b.Fatal(err)
			}
			rows *= int64(copies)
		}
		benchViews(b, s, rows)
	}
}

func benchViews(b *testing.B, s *Store, rows int64) {
	for _, tc := range []struct{ name, q string }{
		{"finest_by_month", `SELECT date_trunc('month', period_at), currency, sum(cost) FROM usage_finest GROUP BY ALL`},
		{"project_monthly_cost", `SELECT count(*), sum(cost) FROM project_monthly_cost`},
		{"payment_method_violations", `SELECT count(*), sum(cost) FROM payment_method_violations`},
		// What every alert check reads after a fetch.
		{"forecasts", `SELECT count(*), sum(forecast_cost) FROM forecasts`},
		{"anomalies", `SELECT count(*), sum(cost) FROM anomalies`},
	} {
		b.Run(fmt.Sprintf("%s/rows=%d", tc.name, rows), func(b *testing.B) {
			for b.Loop() {
				r, err := s.DB().QueryContext(context.Background(), tc.q)
				if err != nil {
					b.Fatal(err)
				}
				for r.Next() {
				}
				if err := r.Err(); err != nil {
					b.Fatal(err)
				}
				r.Close()
			}
			b.ReportMetric(float64(rows)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
		})
	}
}
