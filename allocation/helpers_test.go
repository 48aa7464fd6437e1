package allocation

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

// The chargeback's tests build their stores through the store's own API,
// as the store's tests do (store/helpers_test.go, store/fixture_test.go,
// store/load_bench_test.go): a test file cannot be imported, so the few
// helpers both need are written for each, as export's are.

func openTemp(t *testing.T) *store.Store {
	t.Helper()
	s, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "tally.duckdb"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func date(t testing.TB, s string) time.Time {
	t.Helper()
	d, err := tally.ParseDate(s)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func window(t testing.TB, g tally.Granularity, start, end string) tally.Window {
	return tally.Window{Start: date(t, start), End: date(t, end), Granularity: g}
}

func rowsOf(rows ...tally.MeterData) iter.Seq2[tally.MeterData, error] {
	return func(yield func(tally.MeterData, error) bool) {
		for _, r := range rows {
			if !yield(r, nil) {
				return
			}
		}
	}
}

func load(t *testing.T, s *store.Store, q tally.UsageQuery, rows ...tally.MeterData) store.LoadResult {
	t.Helper()
	res, err := s.LoadWindow(context.Background(), q, store.NewRunID(), rowsOf(rows...))
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// rowsText runs query and renders every row, in the query's order.
func rowsText(t *testing.T, s *store.Store, query string, args ...any) []string {
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

func count(t *testing.T, s *store.Store, query string, args ...any) int64 {
	t.Helper()
	res, err := s.Query(context.Background(), query, args...)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Rows) != 1 || len(res.Rows[0]) != 1 {
		t.Fatalf("%s: got %d rows, want one value", query, len(res.Rows))
	}
	n, ok := res.Rows[0][0].(int64)
	if !ok {
		t.Fatalf("%s: got %T, want int64", query, res.Rows[0][0])
	}
	return n
}

func equalLines(t *testing.T, what string, got, want []string) {
	t.Helper()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("%s differ:\ngot:\n%s\nwant:\n%s", what, strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// benchRows is store's load benchmark's usage: n hourly rows of January
// 2026 over 224 projects and six meters.
func benchRows(b *testing.B, n int) []tally.MeterData {
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
