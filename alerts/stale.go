package alerts

import (
	"context"
	"time"

	"github.com/google/uuid"

	"github.com/tally-dev/tally"
	"github.com/tally-dev/tally/configs"
	"github.com/tally-dev/tally/job"
	"github.com/tally-dev/tally/store"
)

// Freshness is how recent one organization's usage is: job.Freshness,
// which the runner's health, tally status and the fetch's warning show
// too, so none of them imports alerts to show it.
type Freshness = job.Freshness

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
		"age_days": f.AgeDays, "stale_after": job.DurationText(staleAfter), "month": f.NewestDay.Format("2006-01"), "scope": scope,
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
