package sim

import (
	"testing"
	"time"

	"github.com/tally-dev/tally"
)

// A revision changes an earlier day only once the clock reaches its From:
// before, the day is as it was; after, that project's use of that meter on
// that day costs factor times as much, and no other day or meter changes.
func TestRevisionAppearsFromItsTime(t *testing.T) {
	start := time.Date(2026, 9, 1, 0, 0, 0, 0, time.UTC)
	day := time.Date(2026, 9, 10, 0, 0, 0, 0, time.UTC)
	from := time.Date(2026, 10, 20, 12, 0, 0, 0, time.UTC)
	sp, err := ParseRevision("newsroom:streaming_egress_gb:2026-09-10:3@"+from.Format(time.RFC3339), time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	now := from.Add(-time.Minute)
	s := New(Options{Seed: 4, Start: start, Now: func() time.Time { return now }, Revisions: []Spike{sp}})
	plain := New(Options{Seed: 4, Start: start, Now: func() time.Time { return now }})
	meter := tally.UsageQuery{Window: tally.Window{Start: day, End: day.AddDate(0, 0, 1), Granularity: tally.Day}, ProjectNames: []string{"newsroom"}, MeterNames: []string{"streaming_egress_gb"}}
	month := tally.UsageQuery{Window: tally.Window{Start: start, End: start.AddDate(0, 1, 0), Granularity: tally.Day}}
	before := s.Truth(meter)
	if len(before.Cost) == 0 || before.Cost["USD"].Sign() <= 0 && before.Cost["EUR"].Sign() <= 0 {
		t.Fatalf("newsroom has no streaming egress on %s: %v", day.Format(tally.DateLayout), before.Cost)
	}
	if got, want := s.Truth(month).Cost, plain.Truth(month).Cost; !sameCost(got, want) {
		t.Fatalf("before its time the revision changed the month: %v, want %v", got, want)
	}
	now = from
	after := s.Truth(meter)
	for cur, c := range before.Cost {
		if want := c.Add(c).Add(c); after.Cost[cur].Cmp(want) != 0 {
			t.Errorf("%s after the revision: %s, want 3 × %s", cur, after.Cost[cur], c)
		}
	}
	// Everything else in the month is untouched: the month moved by
	// exactly twice the day's cost.
	got, was := s.Truth(month).Cost, plain.Truth(month).Cost
	for cur := range was {
		if want := was[cur].Add(before.Cost[cur].Add(before.Cost[cur])); got[cur].Cmp(want) != 0 {
			t.Errorf("%s month after the revision %s, want %s", cur, got[cur], want)
		}
	}
	if _, err := ParseRevision("newsroom:streaming_egress_gb:2026-09-10:3", time.Time{}); err == nil {
		t.Error("a revision without @WHEN was accepted")
	}
	if _, err := ParseRevision("newsroom:streaming_egress_gb:2026-09-10:3@soon", time.Time{}); err == nil {
		t.Error("a revision with @soon was accepted")
	}
}

func sameCost(a, b map[string]tally.Decimal) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if v.Cmp(b[k]) != 0 {
			return false
		}
	}
	return true
}
