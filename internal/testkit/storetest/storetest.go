package storetest

import (
	"context"
	"iter"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tally-dev/tally"
	"github.com/tally-dev/tally/store"
)

// Open opens a new store in a temp folder, closed when the test ends.
func Open(t testing.TB) *store.Store {
	t.Helper()
	s, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "tally.duckdb"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// Date is the day s (YYYY-MM-DD) at midnight UTC.
func Date(t testing.TB, s string) time.Time {
	t.Helper()
	d, err := tally.ParseDate(s)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// Window is the window of granularity g over the days [start, end).
func Window(t testing.TB, g tally.Granularity, start, end string) tally.Window {
	return tally.Window{Start: Date(t, start), End: Date(t, end), Granularity: g}
}

// Rows yields rows, as a fetch's page reader does.
func Rows(rows ...tally.MeterData) iter.Seq2[tally.MeterData, error] {
	return func(yield func(tally.MeterData, error) bool) {
		for _, r := range rows {
			if !yield(r, nil) {
				return
			}
		}
	}
}

// Load loads rows as q's window, in a run of its own.
func Load(t testing.TB, s *store.Store, q tally.UsageQuery, rows ...tally.MeterData) store.LoadResult {
	t.Helper()
	res, err := s.LoadWindow(context.Background(), q, store.NewRunID(), Rows(rows...))
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// RowsText runs query and renders every row, in the query's order, its
// cells as `tally query` shows them joined by |.
func RowsText(t testing.TB, s *store.Store, query string, args ...any) []string {
	t.Helper()
	res, err := s.Query(context.Background(), query, args...)
	if err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	var out []string
	for _, r := range res.Rows {
		var parts []string
		for i, v := range r {
			s, ok := store.CellText(v, res.Types[i])
			if !ok {
				s = "NULL"
			}
			parts = append(parts, s)
		}
		out = append(out, strings.Join(parts, "|"))
	}
	return out
}

// Scalar runs a one-value query.
func Scalar(t testing.TB, s *store.Store, query string, args ...any) any {
	t.Helper()
	res, err := s.Query(context.Background(), query, args...)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Rows) != 1 || len(res.Rows[0]) != 1 {
		t.Fatalf("%s: got %d rows, want one value", query, len(res.Rows))
	}
	return res.Rows[0][0]
}

// Count runs a one-value query whose value is a count.
func Count(t testing.TB, s *store.Store, query string, args ...any) int64 {
	t.Helper()
	v := Scalar(t, s, query, args...)
	n, ok := v.(int64)
	if !ok {
		t.Fatalf("%s: got %T, want int64", query, v)
	}
	return n
}

// EqualLines fails the test when got and want differ, showing both.
func EqualLines(t testing.TB, what string, got, want []string) {
	t.Helper()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("%s differ:\ngot:\n%s\nwant:\n%s", what, strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
