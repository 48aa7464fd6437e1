package tally

import (
	"strings"
	"testing"
	"time"
)

func TestParseGranularity(t *testing.T) {
	for _, g := range Granularities {
		got, err := ParseGranularity(string(g))
		if err != nil || got != g {
			t.Errorf("ParseGranularity(%q) = %q, %v", g, got, err)
		}
	}
	for _, s := range []string{"", "hourly", "Day", " day", "minute"} {
		_, err := ParseGranularity(s)
		if err == nil || !strings.Contains(err.Error(), `"`+s+`"`) || !strings.Contains(err.Error(), "hour, day, week, month, year") {
			t.Errorf("ParseGranularity(%q) error = %v, want one naming the value and the allowed ones", s, err)
		}
	}
}

func TestGranularityTruncate(t *testing.T) {
	at := time.Date(2026, 3, 18, 13, 45, 10, 5, time.UTC) // a Wednesday
	tests := []struct {
		g    Granularity
		in   time.Time
		want time.Time
	}{
		{Hour, at, time.Date(2026, 3, 18, 13, 0, 0, 0, time.UTC)},
		{Day, at, date("2026-03-18")},
		{Week, at, date("2026-03-16")},
		{Week, date("2026-03-16"), date("2026-03-16")}, // a Monday stays
		{Week, date("2026-03-22"), date("2026-03-16")}, // Sunday belongs to the week before
		{Week, date("2027-01-01"), date("2026-12-28")}, // ISO weeks cross years
		{Month, at, date("2026-03-01")},
		{Year, at, date("2026-01-01")},
		{Day, time.Date(2026, 3, 18, 23, 30, 0, 0, time.FixedZone("X", -3600)), date("2026-03-19")}, // in UTC
		{Month, time.Date(2026, 4, 1, 0, 30, 0, 0, time.FixedZone("Y", 3600)), date("2026-03-01")},  // in UTC
	}
	for _, tc := range tests {
		got := tc.g.Truncate(tc.in)
		if !got.Equal(tc.want) || got.Location() != time.UTC {
			t.Errorf("%s.Truncate(%s) = %s, want %s UTC", tc.g, tc.in, got, tc.want)
		}
	}
	defer func() {
		if recover() == nil {
			t.Error("Truncate of an invalid granularity did not panic")
		}
	}()
	Granularity("minute").Truncate(at)
}

func TestGranularityNext(t *testing.T) {
	tests := []struct {
		g          Granularity
		from, want time.Time
	}{
		{Hour, date("2026-03-29"), date("2026-03-29").Add(time.Hour)},
		{Day, date("2024-02-28"), date("2024-02-29")},
		{Day, date("2026-12-31"), date("2027-01-01")},
		{Week, date("2026-12-28"), date("2027-01-04")},
		{Month, date("2026-01-01"), date("2026-02-01")},
		{Month, date("2026-12-01"), date("2027-01-01")},
		{Year, date("2024-01-01"), date("2025-01-01")},
	}
	for _, tc := range tests {
		if got := tc.g.Next(tc.from); !got.Equal(tc.want) {
			t.Errorf("%s.Next(%s) = %s, want %s", tc.g, tc.from, got, tc.want)
		}
	}
	// Next of a bucket start is the following bucket start, for years of
	// days.
	for _, g := range Granularities {
		u := g.WindowUnit()
		for d := date("2023-12-25"); d.Before(date("2025-03-05")); d = d.AddDate(0, 0, 1) {
			s := u.Truncate(d)
			n := u.Next(s)
			if !u.Truncate(n).Equal(n) || !n.After(d) || !u.Truncate(n.Add(-time.Nanosecond)).Equal(s) {
				t.Fatalf("%s: Next(%s) = %s is not the next bucket start", u, s, n)
			}
		}
	}
}

func TestWindowUnit(t *testing.T) {
	want := map[Granularity]Granularity{Hour: Day, Day: Day, Week: Week, Month: Month, Year: Year}
	for g, u := range want {
		if got := g.WindowUnit(); got != u {
			t.Errorf("%s.WindowUnit() = %s, want %s", g, got, u)
		}
	}
}

func TestMaxEnd(t *testing.T) {
	tests := []struct {
		g     Granularity
		start string
		want  string // "" for no limit
	}{
		{Hour, "2026-01-01", "2026-02-01"},
		{Hour, "2026-02-01", "2026-03-04"},
		{Day, "2026-01-01", "2027-01-01"},
		{Day, "2024-01-01", "2025-01-01"}, // 366 days: one calendar year
		{Day, "2024-02-29", "2025-02-28"},
		{Week, "2026-01-05", ""},
		{Month, "2026-01-01", ""},
		{Year, "2026-01-01", ""},
	}
	for _, tc := range tests {
		got, ok := tc.g.MaxEnd(date(tc.start))
		if tc.want == "" {
			if ok {
				t.Errorf("%s.MaxEnd(%s) = %s, want no limit", tc.g, tc.start, got)
			}
			continue
		}
		if !ok || !got.Equal(date(tc.want)) {
			t.Errorf("%s.MaxEnd(%s) = %s, %v; want %s", tc.g, tc.start, got, ok, tc.want)
		}
	}
}
