package tally

import (
	"fmt"
	"time"
)

// DateLayout is the interface's date format (startDate, endDate, validity
// dates) and the one Tally's command line and config accept.
const DateLayout = "2006-01-02"

// ParseDate parses a YYYY-MM-DD date as midnight UTC.
func ParseDate(s string) (time.Time, error) {
	t, err := time.Parse(DateLayout, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("date %q is not a YYYY-MM-DD calendar date", s)
	}
	return t, nil
}

// Window is one usage query's date range: Start inclusive, End exclusive,
// both midnight UTC, with the granularity of the buckets inside it.
type Window struct {
	Start       time.Time
	End         time.Time
	Granularity Granularity
}

// String renders the window as start..end (end exclusive), the form used in
// logs and errors.
func (w Window) String() string {
	return w.Start.Format(DateLayout) + ".." + w.End.Format(DateLayout)
}

// Validate checks that the window is a range the interface accepts: dates at
// midnight UTC, end after start, edges on bucket boundaries, and within the
// granularity's range limit.
func (w Window) Validate() error {
	if !w.Granularity.Valid() {
		return fmt.Errorf("window %s: granularity %q is not one of hour, day, week, month, year", w, w.Granularity)
	}
	if !w.End.After(w.Start) {
		return fmt.Errorf("window %s: end must be after start", w)
	}
	u := w.Granularity.WindowUnit()
	if !u.Truncate(w.Start).Equal(w.Start) || !u.Truncate(w.End).Equal(w.End) {
		return fmt.Errorf("window %s: edges must fall on %s boundaries", w, u)
	}
	if max, ok := w.Granularity.MaxEnd(w.Start); ok && w.End.After(max) {
		return fmt.Errorf("window %s: a %s window may end no later than %s", w, w.Granularity, max.Format(DateLayout))
	}
	return nil
}

// Contains reports whether t falls inside [Start, End).
func (w Window) Contains(t time.Time) bool {
	return !t.Before(w.Start) && t.Before(w.End)
}

// Buckets counts the window's edge units (days for hour and day windows,
// weeks, months or years otherwise).
func (w Window) Buckets() int {
	u := w.Granularity.WindowUnit()
	n := 0
	for t := w.Start; t.Before(w.End); t = u.Next(t) {
		n++
	}
	return n
}

// Split halves the window on a unit boundary, for an interface that refuses
// a range. It returns false when the window is a single unit and cannot be
// split further.
func (w Window) Split() (Window, Window, bool) {
	n := w.Buckets()
	if n < 2 {
		return w, Window{}, false
	}
	u := w.Granularity.WindowUnit()
	mid := w.Start
	for i := 0; i < n/2; i++ {
		mid = u.Next(mid)
	}
	return Window{w.Start, mid, w.Granularity}, Window{mid, w.End, w.Granularity}, true
}
