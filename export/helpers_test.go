package export

import (
	"context"
	"iter"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tally-dev/tally"
	"github.com/tally-dev/tally/fetch"
	"github.com/tally-dev/tally/fetch/sim"
	"github.com/tally-dev/tally/internal/secret"
	"github.com/tally-dev/tally/store"
)

// The export's tests build their stores through the store's own API, as
// the store's tests do (store/helpers_test.go, store/fixture_test.go,
// allocation/allocation_test.go): a test file cannot be imported, so the few
// helpers both need are written for each.

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

// scalar runs a one-value query.
func scalar(t *testing.T, s *store.Store, query string, args ...any) any {
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

func count(t *testing.T, s *store.Store, query string, args ...any) int64 {
	t.Helper()
	switch v := scalar(t, s, query, args...).(type) {
	case int64:
		return v
	default:
		t.Fatalf("%s: got %T, want int64", query, v)
		return 0
	}
}

func equalLines(t *testing.T, what string, got, want []string) {
	t.Helper()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("%s differ:\ngot:\n%s\nwant:\n%s", what, strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func mustContain(t *testing.T, err error, parts ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("got no error, want one containing %q", parts)
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Fatalf("error %q does not contain %q", err, p)
		}
	}
}

// exportStart and exportNow frame the export fixture: usage from 1 August
// to 20 October 2026, day granularity, basis usage.
var (
	exportStart = time.Date(2026, 8, 1, 0, 0, 0, 0, time.UTC)
	exportNow   = time.Date(2026, 10, 20, 12, 0, 0, 0, time.UTC)
	// The rate cards are snapshotted twice; the second has every price
	// raised by priceBump, so a row shows which card was in force.
	firstSnapshot  = time.Date(2026, 8, 10, 3, 0, 0, 0, time.UTC)
	secondSnapshot = time.Date(2026, 10, 5, 3, 0, 0, 0, time.UTC)
	priceBump      = tally.MustDecimal("0.001")
)

// exportMonths are the windows of the fixture, one per month.
var exportMonths = [][2]string{{"2026-08-01", "2026-09-01"}, {"2026-09-01", "2026-10-01"}, {"2026-10-01", "2026-10-21"}}

// exportFixture is a store holding the simulated organization's usage of
// exportMonths and two reference snapshots read from the simulated
// interface, and the sim that served them.
func exportFixture(t *testing.T) (*store.Store, *sim.Server) {
	t.Helper()
	ctx := context.Background()
	srv := sim.New(sim.Options{Seed: 7, Start: exportStart, Now: func() time.Time { return exportNow }})
	s := openTemp(t)
	for _, m := range exportMonths {
		q := tally.UsageQuery{Window: window(t, tally.Day, m[0], m[1])}
		load(t, s, q, srv.Rows(q)...)
	}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	c, err := fetch.NewClient(ts.URL, secret.New(srv.Token()))
	if err != nil {
		t.Fatal(err)
	}
	var ref store.Reference
	org, err := c.Organization(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ref.Organization = &org
	if ref.PaymentMethods, err = c.PaymentMethods(ctx); err != nil {
		t.Fatal(err)
	}
	for _, pm := range ref.PaymentMethods {
		rc, err := c.RateCard(ctx, pm.ID)
		if err != nil {
			t.Fatal(err)
		}
		ref.RateCards = append(ref.RateCards, rc)
	}
	if ref.Projects, err = c.Projects(ctx); err != nil {
		t.Fatal(err)
	}
	if ref.Locations, err = c.Locations(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.SaveSnapshot(ctx, store.NewRunID(), firstSnapshot, ref); err != nil {
		t.Fatal(err)
	}
	for i := range ref.RateCards {
		for j := range ref.RateCards[i].Entries {
			for k := range ref.RateCards[i].Entries[j].Prices {
				p := &ref.RateCards[i].Entries[j].Prices[k]
				p.Price = p.Price.Add(priceBump)
			}
		}
	}
	if err := s.SaveSnapshot(ctx, store.NewRunID(), secondSnapshot, ref); err != nil {
		t.Fatal(err)
	}
	return s, srv
}

// quoted is a path as a SQL string literal.
func quoted(p string) string { return store.QuoteString(p) }

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

func distinct(t *testing.T, s *store.Store, col, from string) []string {
	t.Helper()
	return rowsText(t, s, `SELECT DISTINCT `+col+` FROM `+from+` ORDER BY 1`)
}

func distinctText(t *testing.T, s *store.Store, q string) []string {
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

// chargebackMonths are the months of the chargeback proofs: the sim's
// usage of August to October 2026 at day granularity.
var chargebackMonths = [][2]string{{"2026-08-01", "2026-09-01"}, {"2026-09-01", "2026-10-01"}, {"2026-10-01", "2026-11-01"}}

func monthOf(t *testing.T, s string) time.Time {
	m, err := time.Parse("2006-01", s)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// chargebackRules uses every method on the sim's projects: newsroom and
// archive are News's, sports-live Sport's, training nobody's (what no rule
// shares of it is Unallocated).
func chargebackRules(t *testing.T) tally.Allocation {
	return tally.Allocation{
		CostCentres: []tally.CostCentre{
			{Name: "News", Owner: "news@example.com", Projects: []string{"newsroom", "archive"}},
			{Name: "Sport", Projects: []string{"sports-live"}},
		},
		Rules: []tally.AllocationRule{
			{Name: "training storage", From: monthOf(t, "2026-08"), Projects: []string{"training"}, Meters: []string{"storage_gb_hours"},
				Receivers: []string{"News", "Sport"}, Method: tally.AllocateFixed, Percent: []tally.Decimal{tally.MustDecimal("33.333333"), tally.MustDecimal("66.666667")}},
			{Name: "archive egress", From: monthOf(t, "2026-08"), Projects: []string{"archive"}, Meters: []string{"streaming_egress_gb"},
				Receivers: []string{"News", "Sport"}, Method: tally.AllocateEven},
			{Name: "drm", From: monthOf(t, "2026-08"), Families: []string{"Content Protection"},
				Receivers: []string{"Sport", "News"}, Method: tally.AllocateProportional},
			{Name: "egress", From: monthOf(t, "2026-08"), Projects: []string{"sports-live"}, Meters: []string{"streaming_egress_gb"},
				Receivers: []string{"News", "Sport"}, Method: tally.AllocateDriver, Driver: "video_encoding_ondemand"},
			// Nobody uses this driver: the split falls back to proportional.
			{Name: "uhd", From: monthOf(t, "2026-08"), Meters: []string{"video_encoding_uhd"},
				Receivers: []string{"News", "Sport"}, Method: tally.AllocateDriver, Driver: "transcode_minutes"},
		},
	}
}

// chargebackFixture is the sim's usage of chargebackMonths in a store.
type chargebackFixture struct {
	s *store.Store
}

func newChargebackFixture(t *testing.T) *chargebackFixture {
	now := time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)
	f := &chargebackFixture{s: openTemp(t)}
	srv := sim.New(sim.Options{Seed: 7, Start: date(t, "2026-08-01"), Now: func() time.Time { return now }})
	for _, m := range chargebackMonths {
		q := tally.UsageQuery{Window: window(t, tally.Day, m[0], m[1])}
		load(t, f.s, q, srv.Rows(q)...)
	}
	return f
}
