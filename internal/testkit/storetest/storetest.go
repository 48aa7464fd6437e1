package storetest

import (
	"context"
	"fmt"
	"iter"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tally-dev/tally"
	"github.com/tally-dev/tally/store"
)

// Open opens a new store in a temp folder, closed when the test ends.
func Open(t testing.TB) *store.Store {
	t.Helper()
	path := filepath.Join(t.TempDir(), "tally.duckdb")
	Place(t, path)
	s, err := store.Open(context.Background(), path)
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

// Strings runs q on the store's database and gives its one column, a
// string, of every row, in the query's order.
func Strings(t testing.TB, s *store.Store, q string) []string {
	t.Helper()
	var out []string
	rows, err := s.DB().QueryContext(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var v string
		if err := rows.Scan(&v); err != nil {
			t.Fatal(err)
		}
		out = append(out, v)
	}
	return out
}

// BenchRows is the load benchmarks' usage (store's, allocation's): n
// hourly rows of January 2026 over 224 projects and six meters, built up
// front so that a benchmark measures the load alone.
func BenchRows(b testing.TB, n int) []tally.MeterData {
	b.Helper()
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	meters := []string{"video_encoding_ondemand", "video_encoding_uhd", "live_channel_minutes", "streaming_egress_gb", "storage_gb_hours", "drm_license_requests"}
	projects := make([]string, 224)
	for i := range projects {
		projects[i] = "project-" + strconv.Itoa(1000+i)
	}
	perHour := (n + 743) / 744
	rows := make([]tally.MeterData, n)
	price := 0.0125
	for i := range rows {
		d := start.Add(time.Duration(i/perHour) * time.Hour)
		dp := d.Add(2 * time.Hour)
		q4 := int64(uint64(i)*0x9e3779b97f4a7c15>>20) % 100_000_000
		rows[i] = tally.MeterData{
			Date: d, DateProcessed: &dp, MeterName: meters[i%len(meters)], MeterSku: "SKU-" + strconv.Itoa(i%len(meters)),
			Family: "Media Services", Solution: "Encoding", Unit: "minutes", Quantity: float64(q4) / 1e4, Price: &price,
			Cost:     tally.MustDecimal(fmt.Sprintf("%d.%010d", q4*12500/10_000_000_000, q4*12500%10_000_000_000)),
			Currency: "USD", EntitlementType: "license", Entitlement: "0f6c2a52-8d1e-4c55-9a43-1b7e2f0a9c01",
			PaymentMethod: "2439471b-5002-49b6-84d1-8fb30e639959", PaymentMethodName: "Marketplace B private offer",
			Project: projects[i/len(meters)%len(projects)],
		}
	}
	return rows
}
