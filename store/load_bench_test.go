package store_test

import (
	"context"
	"iter"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/tally-dev/tally"
	"github.com/tally-dev/tally/internal/testkit/storetest"
	"github.com/tally-dev/tally/store"
)

// BenchmarkLoadWindow loads 200,000 rows into a new on-disk database per
// iteration, through LoadWindow's appender, commit included.
func BenchmarkLoadWindow(b *testing.B) {
	const n = 200_000
	rows := storetest.BenchRows(b, n)
	seq := iter.Seq2[tally.MeterData, error](func(yield func(tally.MeterData, error) bool) {
		for _, r := range rows {
			if !yield(r, nil) {
				return
			}
		}
	})
	q := tally.UsageQuery{Window: tally.Window{Start: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), End: time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC), Granularity: tally.Hour}}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		b.StopTimer()
		s, err := store.Open(context.Background(), filepath.Join(b.TempDir(), "bench"+strconv.Itoa(i)+".duckdb"))
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		res, err := s.LoadWindow(context.Background(), q, store.NewRunID(), seq)
		if err != nil {
			b.Fatal(err)
		}
		if res.Rows != n {
			b.Fatalf("loaded %d rows, want %d", res.Rows, n)
		}
		b.StopTimer()
		s.Close()
		b.StartTimer()
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
}
