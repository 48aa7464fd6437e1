package job

import (
	"context"
	"time"

	"github.com/rs/zerolog"

	"github.com/tally-dev/tally/configs"
	"github.com/tally-dev/tally/fetch"
	"github.com/tally-dev/tally/store"
)

// Env is what one run gives each of its steps: the config, the store the
// run holds (the one writer), the interface's clients, the log, the clock
// and "today".
type Env struct {
	Config *configs.Config
	Client *fetch.Client // the api: form's client
	// Orgs are the organizations of an organizations: config, each with
	// its own client; nil for the api: form, which fetches with Client.
	Orgs  []OrgEnv
	Store *store.Store
	Log   zerolog.Logger
	Clock Clock
	// AsOf, when set, is "today" (a replay, --as-of); Clock stays the
	// clock of when things happen.
	AsOf time.Time
	// Stop closes when the run is asked to stop (SIGTERM): no new window
	// or step starts, while the work in flight may finish until its
	// context is cancelled. nil: never.
	Stop <-chan struct{}
	// Version is the build's, for the User-Agent of webhook posts and
	// the lake's snapshot summaries.
	Version string
	// Observe, when set (tally schedule), receives what steps report for
	// health and metrics, by type: the alert checks' figures, each
	// fetch's judgement of how recent the usage is. The runner takes them
	// by this package's type ([]Freshness) or by their methods (an alert
	// check's BudgetRatios), so it imports no capability; steps only hand
	// them over.
	Observe func(any)
}

// OrgEnv is one organization of an organizations: config, as a run has
// it: its client, or why it cannot be fetched this run.
type OrgEnv struct {
	Org    configs.Organization
	Client *fetch.Client
	// Err is why the organization is not fetched this run (its token
	// missing or expired): the run goes on with the others, partial.
	Err error
}

// Stopping reports whether the run has been asked to stop.
func (e *Env) Stopping() bool {
	select {
	case <-e.Stop:
		return true
	default:
		return false
	}
}

// Now is the run's clock, in UTC.
func (e *Env) Now() time.Time { return e.Clock.Now() }

// Today is the day every date decision counts from: AsOf when a replay
// set it, else the clock.
func (e *Env) Today() time.Time {
	if !e.AsOf.IsZero() {
		return e.AsOf.UTC()
	}
	return e.Now()
}

// Emit hands v to the run's observer, if any.
func (e *Env) Emit(v any) {
	if e.Observe != nil {
		e.Observe(v)
	}
}

type nameKey struct{}

// WithName carries the running job's name to its steps (a close names the
// job that closed the month).
func WithName(ctx context.Context, name string) context.Context {
	return context.WithValue(ctx, nameKey{}, name)
}

// Name is the running job's name, or "job" outside one.
func Name(ctx context.Context) string {
	if s, _ := ctx.Value(nameKey{}).(string); s != "" {
		return s
	}
	return "job"
}
