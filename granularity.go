package tally

import (
	"fmt"
	"time"
)

// Granularity is the time bucket of a usage query.
type Granularity string

// The granularities the interface accepts.
const (
	Hour  Granularity = "hour"
	Day   Granularity = "day"
	Week  Granularity = "week"
	Month Granularity = "month"
	Year  Granularity = "year"
)

// Granularities lists every granularity, finest first.
var Granularities = []Granularity{Hour, Day, Week, Month, Year}

// ParseGranularity accepts the interface's names for a time bucket.
func ParseGranularity(s string) (Granularity, error) {
	g := Granularity(s)
	if !g.Valid() {
		return "", fmt.Errorf("granularity %q is not one of hour, day, week, month, year", s)
	}
	return g, nil
}

// Valid reports whether g is one of the interface's granularities.
func (g Granularity) Valid() bool {
	switch g {
	case Hour, Day, Week, Month, Year:
		return true
	}
	return false
}

// Truncate returns the start of the bucket holding t, in UTC. Weeks start on
// Monday (ISO 8601).
func (g Granularity) Truncate(t time.Time) time.Time {
	t = t.UTC()
	switch g {
	case Hour:
		return t.Truncate(time.Hour)
	case Day:
		return startOfDay(t)
	case Week:
		d := startOfDay(t)
		offset := (int(d.Weekday()) + 6) % 7 // Monday = 0
		return d.AddDate(0, 0, -offset)
	case Month:
		return time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, time.UTC)
	case Year:
		return time.Date(t.Year(), 1, 1, 0, 0, 0, 0, time.UTC)
	}
	panic("fetch: invalid granularity " + string(g))
}

// Next returns the start of the bucket after the one starting at t.
func (g Granularity) Next(t time.Time) time.Time {
	switch g {
	case Hour:
		return t.Add(time.Hour)
	case Day:
		return t.AddDate(0, 0, 1)
	case Week:
		return t.AddDate(0, 0, 7)
	case Month:
		return t.AddDate(0, 1, 0)
	case Year:
		return t.AddDate(1, 0, 0)
	}
	panic("fetch: invalid granularity " + string(g))
}

// WindowUnit is the granularity a window's edges are aligned to. Windows are
// expressed in dates (the interface's startDate and endDate), so hour
// windows align to days.
func (g Granularity) WindowUnit() Granularity {
	if g == Hour {
		return Day
	}
	return g
}

// MaxEnd returns the latest end the interface accepts for a window starting
// at start, and false when the granularity has no range limit.
//
// The limits are the interface's: hour at most 31 days, day at most one
// calendar year (end <= start + 1 year); week, month and year unlimited.
func (g Granularity) MaxEnd(start time.Time) (time.Time, bool) {
	switch g {
	case Hour:
		return start.AddDate(0, 0, 31), true
	case Day:
		// From 29 February a year later is 28 February: the shorter reading,
		// which no implementation of the interface can refuse.
		return addMonthsClamped(start, 12), true
	}
	return time.Time{}, false
}

func startOfDay(t time.Time) time.Time {
	return time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
}
