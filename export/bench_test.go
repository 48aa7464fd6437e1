package export

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/tally-dev/tally"
	"github.com/tally-dev/tally/allocation"
	"github.com/tally-dev/tally/fetch/sim"
	"github.com/tally-dev/tally/internal/testkit/storetest"
	"github.com/tally-dev/tally/store"
)

// benchStore loads a year of the simulated organization's hourly usage,
// one window a month, and one reference snapshot.
func benchStore(b *testing.B) (*store.Store, int64) {
	b.Helper()
	start := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	srv := sim.New(sim.Options{Seed: 11, Start: start, Now: func() time.Time { return start.AddDate(1, 0, 0) }})
	s, err := store.Open(context.Background(), filepath.Join(b.TempDir(), "tally.duckdb"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	var rows int64
	for m := start; m.Before(start.AddDate(1, 0, 0)); m = m.AddDate(0, 1, 0) {
		q := tally.UsageQuery{Window: tally.Window{Start: m, End: m.AddDate(0, 1, 0), Granularity: tally.Hour}}
		res, err := s.LoadWindow(context.Background(), q, store.NewRunID(), storetest.Rows(srv.Rows(q)...))
		if err != nil {
			b.Fatal(err)
		}
		rows += res.Rows
	}
	return s, rows
}

// BenchmarkExport measures a first export of a year of hourly usage (every
// month written) and a rerun with nothing changed (fingerprints only), for
// both formats, FOCUS at 1.3 (the default) and 1.2:
//
//	go test ./export -run '^$' -bench Export -benchtime 3x
func BenchmarkExport(b *testing.B) {
	s, rows := benchStore(b)
	for _, tc := range []struct {
		name string
		o    Options
	}{
		{"parquet", Options{Format: FormatParquet}},
		{"focus", Options{Format: FormatFOCUS, Granularity: tally.Hour, Basis: tally.BasisUsage}},
		{"focus-1.2", Options{Format: FormatFOCUS, Granularity: tally.Hour, Basis: tally.BasisUsage, FOCUSVersion: FOCUS12}},
		{"focus+csv", Options{Format: FormatFOCUS, CSV: true, Granularity: tally.Hour, Basis: tally.BasisUsage}},
	} {
		b.Run(tc.name+"/first", func(b *testing.B) {
			for b.Loop() {
				o := tc.o
				o.Dir = b.TempDir()
				if _, err := Write(context.Background(), s, o); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(rows)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
		})
		b.Run(tc.name+"/unchanged", func(b *testing.B) {
			o := tc.o
			o.Dir = b.TempDir()
			if _, err := Write(context.Background(), s, o); err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				res, err := Write(context.Background(), s, o)
				if err != nil {
					b.Fatal(err)
				}
				if n := len(res.Datasets[0].Written); n != 0 {
					b.Fatalf("a rerun wrote %d months", n)
				}
			}
		})
	}
}

// BenchmarkExportFOCUSAllocation measures the FOCUS 1.3 export of a year
// of hourly usage without chargeback and with it (cost centres owning the
// sim's projects and a sharing rule of every method, so a part of the
// rows is split into allocated rows), at the writer's memory_limit:
//
//	go test ./export -run '^$' -bench ExportFOCUSAllocation -benchtime 1x
func BenchmarkExportFOCUSAllocation(b *testing.B) {
	s, rows := benchStore(b)
	from := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	a := tally.Allocation{
		CostCentres: []tally.CostCentre{
			{Name: "News", Projects: []string{"newsroom", "archive"}},
			{Name: "Sport", Projects: []string{"sports-live"}},
		},
		Rules: []tally.AllocationRule{
			{Name: "training storage", From: from, Projects: []string{"training"}, Meters: []string{"storage_gb_hours"},
				Receivers: []string{"News", "Sport"}, Method: tally.AllocateFixed, Percent: []tally.Decimal{tally.MustDecimal("40"), tally.MustDecimal("60")}},
			{Name: "archive egress", From: from, Projects: []string{"archive"}, Meters: []string{"streaming_egress_gb"},
				Receivers: []string{"News", "Sport"}, Method: tally.AllocateEven},
			{Name: "drm", From: from, Families: []string{"Content Protection"}, Receivers: []string{"Sport", "News"}, Method: tally.AllocateProportional},
			{Name: "egress", From: from, Projects: []string{"sports-live"}, Meters: []string{"streaming_egress_gb"},
				Receivers: []string{"News", "Sport"}, Method: tally.AllocateDriver, Driver: "video_encoding_ondemand"},
		},
	}
	for _, alloc := range []bool{false, true} {
		name := "without"
		if alloc {
			name = "with"
			if err := allocation.Set(context.Background(), s, a); err != nil {
				b.Fatal(err)
			}
		}
		b.Run(name, func(b *testing.B) {
			var written int64
			for b.Loop() {
				res, err := Write(context.Background(), s, Options{Format: FormatFOCUS, Granularity: tally.Hour, Basis: tally.BasisUsage, Dir: b.TempDir()})
				if err != nil {
					b.Fatal(err)
				}
				written = res.Datasets[0].Rows
			}
			b.ReportMetric(float64(rows)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
			b.ReportMetric(float64(written), "rows-written")
		})
	}
}
