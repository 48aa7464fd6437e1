package tally

import (
	"fmt"
	"time"
)

// DataThrough is how far a month's data reaches, as every "through D"
// label says it: the last day that holds usage, whether that day is
// complete, and the days after it that were fetched and held none.
type DataThrough struct {
	LastUsageDay   time.Time // the latest day holding any usage
	AsOf           time.Time // the last complete day (forecasts.as_of)
	LastFetchedDay time.Time // the latest day fetched; zero when unknown
}

// Complete reports whether the last day holding usage is complete: a
// later day has been fetched, whether or not it held usage.
func (d DataThrough) Complete() bool { return !d.LastUsageDay.After(d.AsOf) }

// Empty returns the first and last day fetched after the last day
// holding usage, which held none; ok is false when there are none.
func (d DataThrough) Empty() (first, last time.Time, ok bool) {
	if d.LastFetchedDay.IsZero() || !d.LastFetchedDay.After(d.LastUsageDay) {
		return time.Time{}, time.Time{}, false
	}
	return d.LastUsageDay.AddDate(0, 0, 1), d.LastFetchedDay, true
}

// Label is "2026-11-20 (that day partial)", "2026-11-20 (complete)" or
// "2026-11-20 (complete; none on 2026-11-21 to 2026-11-27, fetched)".
func (d DataThrough) Label() string {
	day := d.LastUsageDay.Format(DateLayout)
	if !d.Complete() {
		return day + " (that day partial)"
	}
	first, last, ok := d.Empty()
	switch {
	case !ok:
		return day + " (complete)"
	case first.Equal(last):
		return fmt.Sprintf("%s (complete; none on %s, fetched)", day, first.Format(DateLayout))
	default:
		return fmt.Sprintf("%s (complete; none on %s to %s, fetched)", day, first.Format(DateLayout), last.Format(DateLayout))
	}
}
