package job

import (
	"fmt"
	"time"

	"github.com/tally-dev/tally"
)

// Freshness is how recent one organization's usage is (the store's, for
// the api: form): its newest day holding usage, counted from today. The
// alerts capability judges it (alerts.Staleness) and alerts on it; a fetch
// hands it to the runner (Env.Emit), whose health fails on stale usage;
// tally status shows it. It lives here, in the contract, so that the
// runner shows it without importing a capability.
type Freshness struct {
	// Organization is organizations.name; for the api: form the stored
	// organization's name, judged for the store as a whole.
	Organization string `json:"organization"`
	// NewestDay is the newest UTC day holding usage.
	NewestDay time.Time `json:"newest_usage_day"`
	// FetchedThrough is the last day the ledger covers (fetched, rows or
	// not); zero when no window at hour or day granularity is loaded.
	FetchedThrough time.Time `json:"fetched_through,omitempty"`
	// AgeDays is today's date less NewestDay, in days.
	AgeDays int `json:"age_days"`
	// Stale is whether NewestDay is older than usage.stale_after.
	Stale bool `json:"stale"`
}

// At judges f as of today: its age in days and whether that is more
// than staleAfter.
func (f Freshness) At(today time.Time, staleAfter time.Duration) Freshness {
	day := tally.Day.Truncate(today.UTC())
	f.AgeDays = int(day.Sub(f.NewestDay) / (24 * time.Hour))
	f.Stale = day.Sub(f.NewestDay) > staleAfter
	return f
}

// Reason is the one line a person reads about stale data.
func (f Freshness) Reason(staleAfter time.Duration) string {
	who := "the store's usage"
	if f.Organization != "" {
		who = "usage of organization " + f.Organization
	}
	fetched := ""
	if !f.FetchedThrough.IsZero() && f.FetchedThrough.After(f.NewestDay) {
		fetched = fmt.Sprintf(", though fetched through %s", f.FetchedThrough.Format(tally.DateLayout))
	}
	return fmt.Sprintf("%s stops on %s: its newest day holding usage is %d days old%s (usage.stale_after %s); the interface may have stopped reporting usage",
		who, f.NewestDay.Format(tally.DateLayout), f.AgeDays, fetched, DurationText(staleAfter))
}

// DurationText words a <n>d or <n>h duration (usage.stale_after) as the
// config takes it.
func DurationText(d time.Duration) string {
	if d%(24*time.Hour) == 0 {
		return fmt.Sprintf("%dd", d/(24*time.Hour))
	}
	return fmt.Sprintf("%dh", d/time.Hour)
}
