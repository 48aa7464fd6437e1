package sim

import (
	"fmt"
	"time"

	"github.com/tally-dev/tally"
)

// The seed's rules for a usage query, read here on their own rather than
// taken from package fetch, so that a test against the simulator cannot
// pass because both sides share one mistake: which granularities exist,
// where a bucket starts ("date … truncated to the query granularity"; weeks
// start on Monday, as ISO 8601 has them), and the range limits (hour: at
// most 31 days; day: at most one year; week, month, year: none).
//
// "At most one year" from 29 February ends on 28 February: the same day a
// year on, or the last day of that month when it has no such day, the
// reading no interface can refuse.

func validGranularity(g tally.Granularity) bool {
	switch g {
	case "hour", "day", "week", "month", "year":
		return true
	}
	return false
}

// bucketStart is the start of the bucket of granularity g holding t, UTC.
func bucketStart(g tally.Granularity, t time.Time) time.Time {
	t = t.UTC()
	y, m, d := t.Date()
	switch g {
	case "hour":
		return time.Date(y, m, d, t.Hour(), 0, 0, 0, time.UTC)
	case "day":
		return time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
	case "week":
		back := (int(t.Weekday()) + 6) % 7 // days since Monday
		return time.Date(y, m, d-back, 0, 0, 0, 0, time.UTC)
	case "month":
		return time.Date(y, m, 1, 0, 0, 0, 0, time.UTC)
	case "year":
		return time.Date(y, 1, 1, 0, 0, 0, 0, time.UTC)
	}
	panic(fmt.Sprintf("sim: granularity %q", g))
}

// nextBucket is the start of the bucket after the one starting at b.
func nextBucket(g tally.Granularity, b time.Time) time.Time {
	switch g {
	case "hour":
		return b.Add(time.Hour)
	case "day":
		return b.AddDate(0, 0, 1)
	case "week":
		return b.AddDate(0, 0, 7)
	case "month":
		return b.AddDate(0, 1, 0)
	case "year":
		return b.AddDate(1, 0, 0)
	}
	panic(fmt.Sprintf("sim: granularity %q", g))
}

// rangeLimit is the last endDate (exclusive) a query of granularity g from
// start may ask for, and whether there is a limit at all.
func rangeLimit(g tally.Granularity, start time.Time) (time.Time, bool) {
	switch g {
	case "hour":
		return start.AddDate(0, 0, 31), true
	case "day":
		y, m, d := start.Date()
		last := time.Date(y+1, m+1, 0, 0, 0, 0, 0, time.UTC).Day() // last day of that month a year on
		return time.Date(y+1, m, min(d, last), 0, 0, 0, 0, time.UTC), true
	}
	return time.Time{}, false
}

// parseDay reads a YYYY-MM-DD date, UTC, and nothing else.
func parseDay(s string) (time.Time, error) {
	if len(s) != len("2006-01-02") {
		return time.Time{}, fmt.Errorf("%q is not YYYY-MM-DD", s)
	}
	return time.Parse("2006-01-02", s)
}
