package tally

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"time"
)

// WindowSize is a configured window length: N days, weeks, months or years.
// The zero value means "the largest the granularity allows".
type WindowSize struct {
	N    int
	Unit byte // 'd', 'w', 'm' or 'y'
}

// maxWindowN bounds N so that adding a size to a date can never overflow.
const maxWindowN = 9999

// ParseWindowSize parses "" (the largest allowed), or <n>d, <n>w, <n>m, <n>y
// with n from 1 to 9999, e.g. "7d", "2w", "1m", "1y".
func ParseWindowSize(s string) (WindowSize, error) {
	if s == "" {
		return WindowSize{}, nil
	}
	bad := fmt.Errorf("%q is not a window size: <n>d, <n>w, <n>m or <n>y with n from 1 to %d (e.g. 7d, 2w, 1m, 1y), or empty for the largest allowed", s, maxWindowN)
	if len(s) < 2 {
		return WindowSize{}, bad
	}
	unit := s[len(s)-1]
	switch unit {
	case 'd', 'w', 'm', 'y':
	default:
		return WindowSize{}, bad
	}
	digits := s[:len(s)-1]
	for _, c := range digits {
		if c < '0' || c > '9' {
			return WindowSize{}, bad
		}
	}
	n, err := strconv.Atoi(digits)
	if err != nil || n < 1 || n > maxWindowN {
		return WindowSize{}, bad
	}
	return WindowSize{N: n, Unit: unit}, nil
}

// IsZero reports whether s is the zero size: the largest the granularity
// allows.
func (s WindowSize) IsZero() bool { return s == WindowSize{} }

// String renders the size as ParseWindowSize accepts it; "" for the zero
// size.
func (s WindowSize) String() string {
	if s.IsZero() {
		return ""
	}
	return strconv.Itoa(s.N) + string(s.Unit)
}

// AddTo returns t moved forward by the size; the zero size returns t.
//
// Months and years keep the day of the month when the target month has it
// and otherwise stop at that month's last day (31 January + 1m = 28 or 29
// February), unlike time.AddDate, which would spill into March. Clamping
// keeps the end a monotonic function of the start, which the planner's
// greedy cutting needs to make the fewest windows.
func (s WindowSize) AddTo(t time.Time) time.Time {
	switch s.Unit {
	case 'd':
		return t.AddDate(0, 0, s.N)
	case 'w':
		return t.AddDate(0, 0, 7*s.N)
	case 'm':
		return addMonthsClamped(t, s.N)
	case 'y':
		return addMonthsClamped(t, 12*s.N)
	}
	return t
}

func addMonthsClamped(t time.Time, n int) time.Time {
	first := time.Date(t.Year(), t.Month(), 1, t.Hour(), t.Minute(), t.Second(), t.Nanosecond(), t.Location())
	target := first.AddDate(0, n, 0)
	last := target.AddDate(0, 1, -1).Day()
	day := t.Day()
	if day > last {
		day = last
	}
	return target.AddDate(0, 0, day-1)
}

// CheckWindowSize reports whether a window size is allowed for a
// granularity. Hour windows may span at most 31 days (31d, 4w, 1m), day
// windows at most one year (365d, 52w, 12m, 1y); week windows are sized in
// weeks, month windows in months or years, year windows in years, so that a
// window never splits a bucket. The zero size is always allowed.
func CheckWindowSize(g Granularity, s WindowSize) error {
	if !g.Valid() {
		return fmt.Errorf("granularity %q is not one of hour, day, week, month, year", g)
	}
	if s.IsZero() {
		return nil
	}
	if s.N < 1 || s.N > maxWindowN {
		return fmt.Errorf("%q is not a window size: n must be from 1 to %d", s, maxWindowN)
	}
	var ok bool
	var allowed string
	switch g {
	case Hour:
		ok = (s.Unit == 'd' && s.N <= 31) || (s.Unit == 'w' && s.N <= 4) || (s.Unit == 'm' && s.N <= 1)
		allowed = "at most 31 days (e.g. 31d, 4w, 1m)"
	case Day:
		ok = (s.Unit == 'd' && s.N <= 365) || (s.Unit == 'w' && s.N <= 52) || (s.Unit == 'm' && s.N <= 12) || (s.Unit == 'y' && s.N <= 1)
		allowed = "at most one year (e.g. 365d, 52w, 12m, 1y)"
	case Week:
		ok = s.Unit == 'w'
		allowed = "sized in weeks (e.g. 4w), so no window splits a week"
	case Month:
		ok = s.Unit == 'm' || s.Unit == 'y'
		allowed = "sized in months or years (e.g. 3m, 1y), so no window splits a month"
	case Year:
		ok = s.Unit == 'y'
		allowed = "sized in years (e.g. 1y)"
	}
	if !ok {
		return fmt.Errorf("%q is not allowed for granularity %s: a %s window is %s", s, g, g, allowed)
	}
	return nil
}

// Reasons a planned window is due, highest priority first.
const (
	ReasonBackfill = "backfill" // nothing of this granularity, basis and scope is loaded yet
	ReasonMissing  = "missing"  // a gap in what is loaded
	ReasonPartial  = "partial"  // loaded before the unit had ended, so incomplete
	ReasonLookback = "lookback" // inside the trailing span fetched again on every run
	ReasonRefetch  = "refetch"  // loaded and final, fetched again because a person asked (tally fetch --refetch)
)

var reasonRank = map[string]int{ReasonRefetch: 0, ReasonLookback: 1, ReasonPartial: 2, ReasonMissing: 3, ReasonBackfill: 4}

// LoadedWindow is a window from the store's ledger, with the time it was
// fetched.
type LoadedWindow struct {
	Window
	FetchedAt time.Time
}

// PlannedWindow is a window to fetch and why.
type PlannedWindow struct {
	Window
	Reason string // one of the Reason constants
	// Organization is whose window it is, with organizations: configured
	// ("" for the api: form's).
	Organization string
}

// PlanInput is what Plan needs to know.
type PlanInput struct {
	From, To    time.Time // [From, To); widened to window-unit boundaries
	Granularity Granularity
	Size        WindowSize // zero: the largest the granularity allows
	// Loaded is the ledger of windows already loaded with the same basis and
	// scope. Windows of another granularity are ignored: they do not hold
	// this granularity's buckets.
	Loaded []LoadedWindow
	// Lookback is the trailing span fetched again on every run, because
	// charges arrive late. It is widened to whole window units and always
	// includes today's unit, even when zero.
	Lookback time.Duration
	Now      time.Time // today is Now's UTC date
	// Refetch makes every unit of [From, To) due, loaded or not: for a
	// person who knows the interface revised a range the lookback has
	// passed. The lookback rule itself is unchanged.
	Refetch bool
}

// Plan returns the windows a fetch of [From, To) must request, ordered by
// start and not overlapping.
//
// A window unit (a day for hour and day granularity, an ISO week, a month,
// a year) is due when no loaded window covers it, when it lies in the
// lookback span [unit of Now-Lookback, To), or when every loaded window
// covering it was fetched before the unit ended. Consecutive due units are
// merged into runs whatever their reason, and each run is cut greedily into
// windows as large as the granularity's range limit and Size allow, which
// gives the fewest windows. A window's reason is the highest-priority reason
// of its units: backfill, missing, partial, lookback.
//
// Whether a unit is partial is judged by the unit's own end, not the loaded
// window's: a window fetched mid-month holds complete data for the days
// that had already ended. Judging by the window's end would re-fetch the
// whole of the last window on every run, since a nightly fetch always ends
// tomorrow.
func Plan(in PlanInput) ([]PlannedWindow, error) {
	g := in.Granularity
	if !g.Valid() {
		return nil, fmt.Errorf("plan: granularity %q is not one of hour, day, week, month, year", g)
	}
	if !in.From.Before(in.To) {
		return nil, fmt.Errorf("plan: from %s must be before to %s", in.From.UTC().Format(DateLayout), in.To.UTC().Format(DateLayout))
	}
	if err := CheckWindowSize(g, in.Size); err != nil {
		return nil, fmt.Errorf("plan: window size: %w", err)
	}
	if in.Lookback < 0 {
		return nil, fmt.Errorf("plan: lookback %s must not be negative", in.Lookback)
	}
	if in.Now.IsZero() {
		return nil, errors.New("plan: now is not set")
	}

	u := g.WindowUnit()
	start := u.Truncate(in.From)
	end := u.Truncate(in.To)
	if end.Before(in.To.UTC()) {
		end = u.Next(end)
	}
	var units []time.Time // unit starts in [start, end), plus end as a sentinel
	for t := start; t.Before(end); t = u.Next(t) {
		units = append(units, t)
	}
	n := len(units)
	units = append(units, end)
	index := func(t time.Time) int { // first unit starting at or after t
		return sort.Search(len(units), func(i int) bool { return !units[i].Before(t) })
	}

	covered := make([]bool, n) // some loaded window holds the unit
	fresh := make([]bool, n)   // some loaded window was fetched after the unit ended
	anyLoaded := false
	for _, lw := range in.Loaded {
		if lw.Granularity != g {
			continue
		}
		anyLoaded = true
		// A unit counts as covered only when it lies wholly inside the
		// loaded window; a window not on unit edges (which the ledger
		// should never hold) thus causes a re-fetch, never a gap.
		for i := index(lw.Start.UTC()); i < n && !units[i+1].After(lw.End.UTC()); i++ {
			covered[i] = true
			if !lw.FetchedAt.Before(units[i+1]) {
				fresh[i] = true
			}
		}
	}
	refetchFrom := u.Truncate(in.Now.Add(-in.Lookback))

	reasons := make([]string, n)
	for i := 0; i < n; i++ {
		switch {
		case !covered[i] && !anyLoaded:
			reasons[i] = ReasonBackfill
		case !covered[i]:
			reasons[i] = ReasonMissing
		case !fresh[i]:
			reasons[i] = ReasonPartial
		case !units[i].Before(refetchFrom):
			reasons[i] = ReasonLookback
		case in.Refetch:
			reasons[i] = ReasonRefetch
		}
	}

	var out []PlannedWindow
	for i := 0; i < n; {
		if reasons[i] == "" {
			i++
			continue
		}
		j := i
		for j < n && reasons[j] != "" {
			j++
		}
		out = cutRun(out, g, in.Size, units, reasons, i, j)
		i = j
	}
	return out, nil
}

// cutRun cuts the due units [i, j) into windows, each as far as the range
// limit and size allow. Both limits are monotonic in the start, so taking
// the farthest end at each step gives the fewest windows.
func cutRun(out []PlannedWindow, g Granularity, size WindowSize, units []time.Time, reasons []string, i, j int) []PlannedWindow {
	for i < j {
		limit := units[j]
		if max, ok := g.MaxEnd(units[i]); ok && max.Before(limit) {
			limit = max
		}
		if !size.IsZero() {
			if e := size.AddTo(units[i]); e.Before(limit) {
				limit = e
			}
		}
		k := i + 1 // always at least one unit
		for k < j && !units[k+1].After(limit) {
			k++
		}
		reason := reasons[i]
		for _, r := range reasons[i+1 : k] {
			if reasonRank[r] > reasonRank[reason] {
				reason = r
			}
		}
		out = append(out, PlannedWindow{Window: Window{units[i], units[k], g}, Reason: reason})
		i = k
	}
	return out
}
