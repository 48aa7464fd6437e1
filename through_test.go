package tally

import (
	"testing"
	"time"
)

func TestDataThroughLabel(t *testing.T) {
	d := func(s string) time.Time {
		t.Helper()
		v, err := time.Parse(DateLayout, s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	for _, c := range []struct {
		last, asOf, fetched, want string
	}{
		// Usage arrives: the latest day is still coming in.
		{"2026-11-24", "2026-11-23", "2026-11-24", "2026-11-24 (that day partial)"},
		// The next day was fetched and held nothing yet (today): complete.
		{"2026-11-24", "2026-11-24", "2026-11-25", "2026-11-24 (complete; none on 2026-11-25, fetched)"},
		// The interface stopped on the 20th; fetched through the 27th.
		{"2026-11-20", "2026-11-26", "2026-11-27", "2026-11-20 (complete; none on 2026-11-21 to 2026-11-27, fetched)"},
		// No ledger (usage loaded by hand): complete, nothing said of later days.
		{"2026-11-20", "2026-11-20", "", "2026-11-20 (complete)"},
	} {
		dt := DataThrough{LastUsageDay: d(c.last), AsOf: d(c.asOf)}
		if c.fetched != "" {
			dt.LastFetchedDay = d(c.fetched)
		}
		if got := dt.Label(); got != c.want {
			t.Errorf("%+v: %q, want %q", c, got, c.want)
		}
	}
}
