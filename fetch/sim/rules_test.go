package sim

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/tally-dev/tally"
)

// The simulator's reading of the seed's rules, at the boundaries.
func TestRules(t *testing.T) {
	d := func(s string) time.Time { t, _ := time.Parse(time.RFC3339, s); return t }
	for _, c := range []struct {
		g           tally.Granularity
		at, start   string
		next, limit string // limit "" when there is none
	}{
		{"hour", "2026-03-01T10:59:59Z", "2026-03-01T10:00:00Z", "2026-03-01T11:00:00Z", "2026-04-01T10:00:00Z"},
		{"day", "2024-02-29T23:00:00Z", "2024-02-29T00:00:00Z", "2024-03-01T00:00:00Z", "2025-02-28T00:00:00Z"},
		{"day", "2026-12-31T05:00:00Z", "2026-12-31T00:00:00Z", "2027-01-01T00:00:00Z", "2027-12-31T00:00:00Z"},
		{"week", "2026-11-29T12:00:00Z", "2026-11-23T00:00:00Z", "2026-11-30T00:00:00Z", ""}, // a Sunday: its Monday
		{"week", "2026-11-23T00:00:00Z", "2026-11-23T00:00:00Z", "2026-11-30T00:00:00Z", ""}, // a Monday: itself
		{"month", "2026-02-28T23:00:00Z", "2026-02-01T00:00:00Z", "2026-03-01T00:00:00Z", ""},
		{"year", "2026-07-04T00:00:00Z", "2026-01-01T00:00:00Z", "2027-01-01T00:00:00Z", ""},
	} {
		b := bucketStart(c.g, d(c.at))
		if !b.Equal(d(c.start)) || !nextBucket(c.g, b).Equal(d(c.next)) {
			t.Errorf("%s of %s: bucket %s, next %s; want %s, %s", c.g, c.at, b, nextBucket(c.g, b), c.start, c.next)
		}
		limit, ok := rangeLimit(c.g, b)
		if ok != (c.limit != "") || (ok && !limit.Equal(d(c.limit))) {
			t.Errorf("%s from %s: limit %s (%v), want %q", c.g, b, limit, ok, c.limit)
		}
	}
}

// Tally's rules (package fetch) and the simulator's own, written apart,
// agree over many random dates: were Tally's rules wrong, the two would
// part here rather than agree by construction.
func TestRulesAgreeWithTallys(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	lo := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC).Unix()
	hi := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC).Unix()
	for i := 0; i < 20000; i++ {
		at := time.Unix(lo+rng.Int64N(hi-lo), 0).UTC()
		if i%500 == 0 {
			at = time.Date(2024+4*(i%2), 2, 29, 6, 0, 0, 0, time.UTC) // leap days too
		}
		for _, g := range []tally.Granularity{tally.Hour, tally.Day, tally.Week, tally.Month, tally.Year} {
			b := bucketStart(g, at)
			if want := g.Truncate(at); !b.Equal(want) {
				t.Fatalf("%s of %s: sim %s, Tally %s", g, at, b, want)
			}
			if got, want := nextBucket(g, b), g.Next(b); !got.Equal(want) {
				t.Fatalf("next %s after %s: sim %s, Tally %s", g, b, got, want)
			}
			sl, sok := rangeLimit(g, b)
			tl, tok := g.MaxEnd(b)
			if sok != tok || (sok && !sl.Equal(tl)) {
				t.Fatalf("%s from %s: sim limit %s (%v), Tally %s (%v)", g, b, sl, sok, tl, tok)
			}
		}
	}
}
