package export

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/tally-dev/tally"
	"github.com/tally-dev/tally/fetch"
	"github.com/tally-dev/tally/fetch/sim"
	"github.com/tally-dev/tally/internal/secret"
	"github.com/tally-dev/tally/internal/testkit/chargebackcheck"
	"github.com/tally-dev/tally/internal/testkit/storetest"
	"github.com/tally-dev/tally/store"
)

// The export's tests build their stores through the store's own API
// (internal/testkit/storetest), as the allocation's do.

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
	s := storetest.Open(t)
	for _, m := range exportMonths {
		q := tally.UsageQuery{Window: storetest.Window(t, tally.Day, m[0], m[1])}
		storetest.Load(t, s, q, srv.Rows(q)...)
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

func distinct(t *testing.T, s *store.Store, col, from string) []string {
	t.Helper()
	return storetest.RowsText(t, s, `SELECT DISTINCT `+col+` FROM `+from+` ORDER BY 1`)
}

// chargebackFixture is the sim's usage of chargebackcheck.Months in a store.
type chargebackFixture struct {
	s *store.Store
}

func newChargebackFixture(t *testing.T) *chargebackFixture {
	now := time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)
	f := &chargebackFixture{s: storetest.Open(t)}
	srv := sim.New(sim.Options{Seed: 7, Start: storetest.Date(t, "2026-08-01"), Now: func() time.Time { return now }})
	for _, m := range chargebackcheck.Months {
		q := tally.UsageQuery{Window: storetest.Window(t, tally.Day, m[0], m[1])}
		storetest.Load(t, f.s, q, srv.Rows(q)...)
	}
	return f
}
