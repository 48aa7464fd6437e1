package allocation

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/tally-dev/tally"
	"github.com/tally-dev/tally/internal/testkit/storetest"
	"github.com/tally-dev/tally/store"
)

// BenchmarkCostAllocation reads a month's chargeback from the views over
// 200,000 hourly rows of 224 projects (storetest.BenchRows, as store's load benchmark): 20 cost centres of 10
// projects each; the other 24 projects shared among all 20 in proportion
// to their own usage, and one meter of every project by a driver. It
// reports the month's lines and its cost centres' totals, per read.
//
//	go test ./allocation -run '^$' -bench CostAllocation -benchtime 5x
func BenchmarkCostAllocation(b *testing.B) {
	ctx := context.Background()
	s, err := store.Open(ctx, b.TempDir()+"/tally.duckdb")
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	q := tally.UsageQuery{Window: tally.Window{Start: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), End: time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC), Granularity: tally.Hour}}
	rows := storetest.BenchRows(b, 200_000)
	if _, err := s.LoadWindow(ctx, q, store.NewRunID(), storetest.Rows(rows...)); err != nil {
		b.Fatal(err)
	}
	var a tally.Allocation
	var all []string
	for c := 0; c < 20; c++ {
		cc := tally.CostCentre{Name: fmt.Sprintf("centre-%02d", c)}
		for p := 0; p < 10; p++ {
			cc.Projects = append(cc.Projects, fmt.Sprintf("project-%d", 1000+c*10+p))
		}
		a.CostCentres = append(a.CostCentres, cc)
		all = append(all, cc.Name)
	}
	var shared []string
	for p := 200; p < 224; p++ {
		shared = append(shared, fmt.Sprintf("project-%d", 1000+p))
	}
	a.Rules = []tally.AllocationRule{
		{Name: "platform", From: q.Window.Start, Projects: shared, Receivers: all, Method: tally.AllocateProportional},
		{Name: "egress", From: q.Window.Start, Meters: []string{"streaming_egress_gb"}, Receivers: all, Method: tally.AllocateDriver, Driver: "video_encoding_ondemand"},
	}
	if err := Set(ctx, s, a); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	var lines, centres int64
	for i := 0; i < b.N; i++ {
		if err := s.DB().QueryRowContext(ctx, `SELECT count(*) FROM cost_allocation WHERE month = DATE '2026-01-01'`).Scan(&lines); err != nil {
			b.Fatal(err)
		}
		if err := s.DB().QueryRowContext(ctx, `SELECT count(*) FROM cost_centre_monthly_cost WHERE month = DATE '2026-01-01'`).Scan(&centres); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(lines), "lines")
	b.ReportMetric(float64(centres), "centre-months")
}
