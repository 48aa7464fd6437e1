package schedules

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/rs/zerolog"

	"github.com/tally-dev/tally/configs"
	"github.com/tally-dev/tally/fetch"
	"github.com/tally-dev/tally/store"
)

// Runner holds what every job needs from outside the core packages: the
// config, the token (read by the command, never from the YAML), the logger
// and the version for the User-Agent.
type Runner struct {
	Config  *configs.Config
	Token   string
	Log     zerolog.Logger
	Version string
	Now     func() time.Time // nil = time.Now
	// LockWait bounds the wait for another writer; zero = the config's
	// schedule.lock_wait.
	LockWait time.Duration

	// retry replaces the policy built from the config, so tests can retry
	// through injected faults without really waiting.
	retry *fetch.RetryPolicy
}

// Client builds the interface client from the config.
func (r *Runner) Client() (*fetch.Client, error) {
	api := r.Config.API
	policy := fetch.DefaultRetry()
	policy.MaxAttempts = api.MaxRetries + 1
	if r.retry != nil {
		policy = *r.retry
	}
	return fetch.NewClient(api.BaseURL, r.Token,
		fetch.WithHTTPClient(newHTTPClient(api.Timeout, api.Concurrency)),
		fetch.WithRetry(policy),
		fetch.WithLogger(r.Log),
		fetch.WithPaths(api.Paths),
		fetch.WithUserAgent(r.Version),
	)
}

// withRun runs fn as one recorded run: it takes the writer lock, opens the
// store, records the run in `runs` and its outcome, whatever fn returns, and
// then publishes the analysts' copy, so the copy shows the run finished. It
// returns the copy's path.
func (r *Runner) withRun(ctx context.Context, command, job string, fn func(ctx context.Context, env *Env, runID uuid.UUID) (runStats, error)) (string, error) {
	wait := r.LockWait
	if wait == 0 {
		wait = r.Config.Schedule.LockWait
	}
	client, err := r.Client()
	if err != nil {
		return "", err
	}
	lock, err := store.AcquireLock(ctx, r.Config.Store.Path, command, wait)
	if err != nil {
		return "", err
	}
	defer lock.Release()
	st, err := store.Open(ctx, r.Config.Store.Path)
	if err != nil {
		return "", err
	}
	defer st.Close()
	env := &Env{Config: r.Config, Client: client, Store: st, Log: r.Log, Now: r.Now}
	runID := store.NewRunID()
	if err := st.BeginRun(ctx, runID, command, job); err != nil {
		return "", err
	}
	log := r.Log.With().Str("run_id", runID.String()).Logger()
	env.Log = log
	log.Info().Str("command", command).Msg("run started")
	stats, runErr := fn(ctx, env, runID)
	res := store.RunResult{Status: "ok", Rows: stats.rows, Windows: stats.windows}
	var pe *PartialError
	switch {
	case errors.As(runErr, &pe):
		res.Status = "partial"
	case runErr != nil:
		res.Status = "failed"
	}
	if runErr != nil {
		res.Err = runErr.Error()
	}
	// The outcome is recorded even when ctx was cancelled: a run that was
	// interrupted must say so.
	finishCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := st.FinishRun(finishCtx, runID, res); err != nil {
		return "", errors.Join(runErr, fmt.Errorf("record run %s: %w", runID, err))
	}
	log.Info().Str("status", res.Status).Int64("rows", stats.rows).Int("windows", stats.windows).Msg("run finished")
	if ctx.Err() != nil {
		return "", runErr // shutting down: the previous copy stays in place
	}
	published, err := st.Publish(ctx)
	if err != nil {
		return "", errors.Join(runErr, fmt.Errorf("publish analysts' copy: %w", err))
	}
	return published, runErr
}

type runStats struct {
	rows    int64
	windows int
}

// Fetch is `tally fetch`: one recorded run of the fetch job.
func (r *Runner) Fetch(ctx context.Context, opts FetchOptions) (FetchSummary, error) {
	var sum FetchSummary
	published, err := r.withRun(ctx, "fetch", "", func(ctx context.Context, env *Env, runID uuid.UUID) (runStats, error) {
		var err error
		sum, err = Fetch(ctx, env, runID, opts)
		return runStats{rows: sum.Rows, windows: sum.Loaded}, err
	})
	sum.Published = published
	return sum, err
}
