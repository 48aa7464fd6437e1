package alerts

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/tally-dev/tally"
	"github.com/tally-dev/tally/configs"
	"github.com/tally-dev/tally/store"
)

// Freshness is how recent one organization's usage is (the store's, for
// the api: form): its newest day holding usage, counted from today.
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

// Staleness judges how recent each organization's usage is as of today
// (the store's as a whole for the api: form): stale when its newest day
// holding usage is more than usage.stale_after before today's date. An
// organization with no usage at hour or day granularity is not listed:
// there is nothing yet that could have stopped.
func Staleness(ctx context.Context, st *store.Store, cfg *configs.Config, today time.Time) ([]Freshness, error) {
	newest, err := st.NewestUsageDays(ctx)
	if err != nil {
		return nil, err
	}
	if !cfg.Grouped() && len(newest) > 1 {
		// The api: form is judged store-wide: the newest of any.
		all := newest[0]
		for _, n := range newest[1:] {
			if n.Day.After(all.Day) {
				all.Organization, all.Day = n.Organization, n.Day
			}
			if n.FetchedTo.After(all.FetchedTo) {
				all.FetchedTo = n.FetchedTo
			}
		}
		newest = []store.NewestUsage{all}
	}
	var out []Freshness
	for _, n := range newest {
		f := Freshness{Organization: n.Organization, NewestDay: n.Day}
		if !n.FetchedTo.IsZero() {
			f.FetchedThrough = n.FetchedTo.AddDate(0, 0, -1)
		}
		out = append(out, f.At(today, cfg.Usage.StaleAfter))
	}
	return out, nil
}

// staleAlert is the one alert of a stale episode. Its key names the
// organization and its newest day: every later check of the same episode
// finds the same key (sent once), and data that resumes and stops again
// stops on another day, a new episode with a new key.
func staleAlert(f Freshness, staleAfter time.Duration, runID uuid.UUID, now time.Time) Alert {
	day := f.NewestDay.Format(tally.DateLayout)
	text := "Tally: " + f.Reason(staleAfter) + "."
	scope := "all"
	if f.Organization != "" {
		scope = "organization:" + f.Organization
	}
	body := map[string]any{
		"kind": "stale", "text": text, "organization": f.Organization, "newest_usage_day": day,
		"age_days": f.AgeDays, "stale_after": DurationText(staleAfter), "month": f.NewestDay.Format("2006-01"), "scope": scope,
	}
	if !f.FetchedThrough.IsZero() {
		body["fetched_through"] = f.FetchedThrough.Format(tally.DateLayout)
	}
	return Alert{
		Key:  "stale:" + f.Organization + ":" + day,
		Kind: "stale", Organization: f.Organization, FoundAt: now, RunID: runID,
		Month: time.Date(f.NewestDay.Year(), f.NewestDay.Month(), 1, 0, 0, 0, 0, time.UTC),
		Scope: scope, Currency: "", Text: text, Payload: payload(body), Status: StatusPending,
	}
}
