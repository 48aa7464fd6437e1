package schedules

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/rs/zerolog"

	"github.com/tally-dev/tally/configs"
	"github.com/tally-dev/tally/fetch"
	"github.com/tally-dev/tally/internal/secret"
	"github.com/tally-dev/tally/job"
	"github.com/tally-dev/tally/store"
)

// Runner holds what every job needs from outside the core packages: the
// config, the token (read by the command, never from the YAML), the logger
// and the version for the User-Agent.
type Runner struct {
	Config *configs.Config
	Token  secret.Value // the api: form's token
	// Tokens are an organizations: config's tokens by organization name;
	// TokenErrs say why one could not be read. An organization with
	// neither, or with an expired token, is not fetched and the run is
	// partial, naming it.
	Tokens    map[string]secret.Value
	TokenErrs map[string]error
	Log       zerolog.Logger
	Version   string
	Commit    string    // the build's commit, for tally_build_info
	Now       job.Clock // nil = the wall clock
	// AsOf, when set (--as-of), is "today" for everything that decides
	// by the date (the lookback, close_after, the months, forecasts,
	// budgets, staleness and labels), while Now stays the clock of when
	// things happen (a run's start, a close's stamp, a token's expiry).
	AsOf time.Time
	// LockWait bounds the wait for another writer; zero = the config's
	// schedule.lock_wait.
	LockWait time.Duration

	// CheckToken, when set, refuses a token past its expiry before a run
	// sends it (and warns of one expiring soon): ingest.CheckOrgToken,
	// handed in by the command line so the runner knows no capability.
	CheckToken func(cfg *configs.Config, o configs.Organization, token secret.Value, now time.Time, log zerolog.Logger) error

	// Retry, when set, replaces the policy built from the config, so
	// tests (this package's and each capability's) retry through injected
	// faults without really waiting.
	Retry *fetch.RetryPolicy
	// observer, when set (tally schedule), counts the client's requests
	// and retries for /metrics.
	observer fetch.Observer
	// onAlerts, when set (tally schedule), receives alert checks for
	// /metrics.
	onAlerts func(alertFigures)
	// onFreshness, when set (tally schedule), receives each fetch's
	// judgement of how recent the usage is.
	onFreshness func([]job.Freshness)
}

// observe is the steps' job.Env.Observe: what they report for health and
// metrics, by type.
func (r *Runner) observe(v any) {
	switch v := v.(type) {
	case alertFigures:
		if r.onAlerts != nil {
			r.onAlerts(v)
		}
	case []job.Freshness:
		if r.onFreshness != nil {
			r.onFreshness(v)
		}
	}
}

// Today is "today" of the runner: its AsOf when set, else its clock.
func (r *Runner) Today() time.Time {
	if !r.AsOf.IsZero() {
		return r.AsOf.UTC()
	}
	return r.Now.Now()
}

// asOfPtr is a run's as-of as runs records it: nil when the run had none.
func asOfPtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	d := t.UTC()
	return &d
}

// Client builds the interface client of the api: form from the config.
func (r *Runner) Client() (*fetch.Client, error) {
	return r.orgClient(r.Config.Orgs()[0], r.Token)
}

// orgClient builds organization o's client: its address, paths and token.
func (r *Runner) orgClient(o configs.Organization, token secret.Value) (*fetch.Client, error) {
	api := r.Config.API
	policy := fetch.DefaultRetry()
	policy.MaxAttempts = api.MaxRetries + 1
	if r.Retry != nil {
		policy = *r.Retry
	}
	opts := []fetch.Option{}
	if r.observer != nil {
		opts = append(opts, fetch.WithObserver(r.observer))
	}
	log := r.Log
	if o.Name != "" {
		log = log.With().Str("organization", o.Name).Logger()
	}
	return fetch.NewClient(o.BaseURL, token, append(opts,
		fetch.WithHTTPClient(fetch.NewHTTPClient(api.Timeout, api.AnswerTimeout, api.Concurrency)),
		fetch.WithRetry(policy),
		fetch.WithConnectRetries(api.ConnectRetries),
		fetch.WithLogger(log),
		fetch.WithPaths(o.Paths),
		fetch.WithUserAgent(r.Version),
	)...)
}

// checkToken is r.CheckToken, when set, of organization o's token (o
// zero: the api: form's).
func (r *Runner) checkToken(o configs.Organization, token secret.Value, now time.Time) error {
	if r.CheckToken == nil {
		return nil
	}
	return r.CheckToken(r.Config, o, token, now, r.Log)
}

// orgEnvs builds each organization's client, or says why it is not
// fetched this run: its token unread or expired.
func (r *Runner) orgEnvs(now time.Time) ([]job.OrgEnv, error) {
	var out []job.OrgEnv
	for _, o := range r.Config.Orgs() {
		oe := job.OrgEnv{Org: o}
		tok, ok := r.Tokens[o.Name]
		switch err := r.TokenErrs[o.Name]; {
		case err != nil:
			oe.Err = err
		case !ok || tok.IsZero():
			oe.Err = fmt.Errorf("no token read for organization %s (%s.token_env or token_file)", o.Name, o.Field)
		default:
			if err := r.checkToken(o, tok, now); err != nil {
				oe.Err = err
				break
			}
			c, err := r.orgClient(o, tok)
			if err != nil {
				return nil, fmt.Errorf("organization %s: %w", o.Name, err)
			}
			oe.Client = c
		}
		out = append(out, oe)
	}
	return out, nil
}

// RecordStep runs fn as one recorded run of command (see Record), under
// no job's name, and returns the path of the analysts' copy it published:
// what a command that is one capability's work (tally close, tally alerts)
// runs it by.
func (r *Runner) RecordStep(ctx context.Context, command string, fn job.Step) (string, error) {
	out, err := r.Record(ctx, command, "", fn)
	return out.Published, err
}

// RunOutcome is how one recorded run went: its row in `runs`.
type RunOutcome struct {
	store.RunInfo
	Published string // the analysts' copy, when the run published one
}

// SkippedError is a run that did not start because another process held
// the database's lock for longer than schedule.lock_wait. The skip is
// recorded (see store.JournalPath) and the error names the holder.
type SkippedError struct {
	Wait   time.Duration
	Locked *store.LockedError // nil when the wait ended by shutdown
	Err    error              // why it stopped waiting, when not Locked
}

func (e *SkippedError) Error() string {
	if e.Locked != nil {
		return fmt.Sprintf("run skipped after waiting %s for the lock: %v", e.Wait, e.Locked)
	}
	return fmt.Sprintf("run skipped while waiting for the lock: %v", e.Err)
}

func (e *SkippedError) Unwrap() error {
	if e.Locked != nil {
		return e.Locked
	}
	return e.Err
}

// Record runs fn (a step, or a whole job's steps) as one recorded run of
// command, under job's name ("" for none). It takes the writer lock,
// waiting up to schedule.lock_wait (a run that gives up is recorded as
// skipped, naming the holder), opens the store, folds in the runs noted
// while others held it, records the run in `runs` and its outcome, whatever
// fn returns or however it panics, and then publishes the analysts' copy,
// so the copy shows the run finished.
//
// Cancelling ctx is a request to stop: fn's env.Stop closes at once, so no
// new window or step starts, and fn's own context is cancelled
// schedule.grace later, so what is in flight finishes or rolls back.
func (r *Runner) Record(ctx context.Context, command, jobName string, fn job.Step) (RunOutcome, error) {
	out := RunOutcome{RunInfo: store.RunInfo{Command: command, Job: jobName}}
	now := r.Now.Now
	// Every run checks: a scheduler runs for months while a token
	// expires at most a year after it was made. An organizations:
	// config checks each organization's, which fails it alone.
	var (
		client *fetch.Client
		orgs   []job.OrgEnv
		err    error
	)
	if r.Config.Grouped() {
		if orgs, err = r.orgEnvs(now().UTC()); err != nil {
			return out, err
		}
	} else if !r.Token.IsZero() {
		// No token: the command runs no fetch (it sends nothing to
		// the interface), so it read none; a fetch step refuses.
		if err := r.checkToken(configs.Organization{}, r.Token, now().UTC()); err != nil {
			return out, err
		}
		if client, err = r.Client(); err != nil {
			return out, err
		}
	}
	wait := r.LockWait
	if wait == 0 {
		wait = r.Config.Schedule.LockWait
	}
	db := r.Config.Store.Path
	holder := command
	if jobName != "" {
		holder += " " + jobName
	}
	began := time.Now().UTC()
	lock, err := store.AcquireLockNotify(ctx, db, holder, wait, func(h *store.LockInfo, waited time.Duration) {
		ev := r.Log.Info().Str("lock", store.LockPath(db)).Stringer("waited", waited.Round(time.Second)).Stringer("wait_limit", wait)
		if h != nil {
			ev = ev.Int("holder_pid", h.PID).Str("holder_command", h.Command).Time("holder_started", h.Started)
		}
		ev.Msg("waiting for the database lock: another run holds it")
	})
	if err != nil {
		return r.skipped(ctx, out, began, wait, err)
	}
	defer lock.Release()
	st, err := store.Open(ctx, db, store.Notify(func(p store.FillProgress) {
		msg := "filling a table the load keeps, a month at a time, after an upgrade"
		if p.Table == "usage" {
			msg = "numbering the usage rows' keys, a month at a time, after an upgrade"
		}
		r.Log.Info().Str("table", p.Table).Str("month", p.Month.Format("2006-01")).Int("done", p.Done).Int("months", p.Months).
			Stringer("took", p.Took.Round(time.Millisecond)).Msg(msg)
	}))
	if err != nil {
		return out, err
	}
	defer st.Close()
	// A shard's store holds its organizations alone: one of another
	// shard's (the shard count changed, another shard's store) is refused
	// before the run begins or anything is fetched.
	if err := r.checkShard(ctx, st); err != nil {
		return out, err
	}
	r.tidyRuns(ctx, st)
	if sh := r.Config.Shard; !sh.IsZero() && len(r.Config.Organizations) == 0 {
		fn = idleShard(r.Config)
	}

	runCtx, stop := graceful(ctx, r.Config.Schedule.Grace)
	defer stop()
	env := &job.Env{Config: r.Config, Client: client, Orgs: orgs, Store: st, Log: r.Log, Clock: r.Now, AsOf: r.AsOf, Stop: ctx.Done(), Version: r.Version, Observe: r.observe}
	// What capabilities do first in every run that writes (the analysts'
	// chargeback views follow the config of the latest run that wrote;
	// closed months keep what their close froze).
	for _, start := range job.Starts() {
		if err := start(ctx, env); err != nil {
			return out, err
		}
	}
	runID := store.NewRunID()
	out.ID = runID
	out.AsOf = asOfPtr(r.AsOf)
	if err := st.BeginRunAsOf(ctx, runID, command, jobName, r.AsOf); err != nil {
		return out, err
	}
	out.Started = time.Now().UTC()
	log := r.Log.With().Str("run_id", runID.String()).Logger()
	if jobName != "" {
		log = log.With().Str("job", jobName).Logger()
	}
	env.Log = log
	log.Info().Str("command", command).Msg("run started")
	stats, runErr := callRecovering(runCtx, env, runID, fn)
	res := store.RunResult{Status: store.RunOK, Rows: stats.Rows, Windows: stats.Windows, Warnings: stats.Warnings}
	var pe *job.Partial
	switch {
	case errors.As(runErr, &pe):
		res.Status = store.RunPartial
	case runErr != nil:
		res.Status = store.RunFailed
	}
	if runErr != nil {
		res.Err = runErr.Error()
	}
	out.Status, out.Error, out.Rows, out.Windows = res.Status, res.Err, res.Rows, res.Windows
	// The outcome is recorded even when ctx was cancelled: a run that was
	// interrupted must say so.
	finishCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := st.FinishRun(finishCtx, runID, res); err != nil {
		return out, errors.Join(runErr, fmt.Errorf("record run %s: %w", runID, err))
	}
	fin := time.Now().UTC()
	out.Finished = &fin
	log.Info().Str("status", res.Status).Int64("rows", stats.Rows).Int("windows", stats.Windows).Msg("run finished")
	if ctx.Err() != nil {
		return out, runErr // shutting down: the previous copy stays in place
	}
	// A stop asked for while publishing lets the copy finish within the
	// grace, as it lets a window finish.
	pubStart := time.Now()
	log.Info().Msg("publishing the analysts' copy")
	published, err := st.Publish(runCtx)
	if err != nil {
		return out, r.unpublished(finishCtx, st, runID, res, &out, runErr, err)
	}
	log.Info().Str("path", published).Dur("took", time.Since(pubStart).Round(time.Millisecond)).Msg("analysts' copy published")
	out.Published = published
	return out, runErr
}

// unpublished is the error of a run whose analysts' copy could not be
// published (a full disk, say). What the run did is in the store and
// recorded, so a run that did its work is partial, not failed: its row is
// made partial, listing the publish with its other failures, and the next
// run publishes the copy (every run publishes at its end). A failed run
// stays failed, naming both.
func (r *Runner) unpublished(ctx context.Context, st *store.Store, runID uuid.UUID, res store.RunResult, out *RunOutcome, runErr, pubErr error) error {
	pubErr = fmt.Errorf("the analysts' copy %s is not published, so tally status, report, query and export still show the data as it was before this run; the next run publishes it: %w",
		store.PublishedPath(r.Config.Store.Path), pubErr)
	r.Log.Error().Str("run_id", runID.String()).Err(pubErr).Msg("analysts' copy not published")
	if res.Status == store.RunFailed {
		return errors.Join(runErr, pubErr)
	}
	var failures job.Partial
	if runErr != nil {
		failures.Add(runErr)
	}
	failures.Add(pubErr)
	res.Status, res.Err = store.RunPartial, failures.Error()
	out.Status, out.Error = res.Status, res.Err
	if err := st.FinishRun(ctx, runID, res); err != nil {
		r.Log.Warn().Str("run_id", runID.String()).Err(err).Msg("the run's row does not say the copy is not published")
	}
	return &failures
}

// skipped records a run that could not take the lock (see store.JournalPath) and
// returns the *SkippedError. Errors other than a held lock or a stop while
// waiting (a missing folder, say) are returned as they are.
func (r *Runner) skipped(ctx context.Context, out RunOutcome, began time.Time, wait time.Duration, lockErr error) (RunOutcome, error) {
	serr := &SkippedError{Wait: wait}
	switch {
	case errors.As(lockErr, &serr.Locked):
	case ctx.Err() != nil:
		serr.Err = lockErr
		if h, _ := store.LockHolder(r.Config.Store.Path); h != nil {
			serr.Err = fmt.Errorf("%w (the lock is held by pid %d, command %q)", lockErr, h.PID, h.Command)
		}
	default:
		return out, lockErr
	}
	fin := time.Now().UTC()
	out.ID, out.Started, out.Finished = store.NewRunID(), began, &fin
	out.Status, out.Error = store.RunSkipped, serr.Error()
	if err := store.AppendJournal(r.Config.Store.Path, out.RunInfo); err != nil {
		return out, errors.Join(serr, err)
	}
	r.Log.Warn().Str("run_id", out.ID.String()).Str("command", out.Command).Str("job", out.Job).Err(serr).Msg("run skipped")
	return out, serr
}

// checkShard refuses a sharded run on a store that holds an organization
// its shard does not take (job.ErrRefused, exit 2): mixed, the store's
// group figures would be neither shard's, and the organization would be
// fetched by two shards into two stores. The store's organizations table
// is a few rows, read before the run begins.
func (r *Runner) checkShard(ctx context.Context, st *store.Store) error {
	sh := r.Config.Shard
	if sh.IsZero() {
		return nil
	}
	orgs, err := st.Organizations(ctx)
	if err != nil {
		return err
	}
	var others []string
	for _, o := range orgs {
		if !sh.Takes(o.Name) {
			others = append(others, fmt.Sprintf("%s (shard %d/%d)", o.Name, configs.ShardOf(o.Name, sh.Count), sh.Count))
		}
	}
	if len(others) == 0 {
		return nil
	}
	what := "organization"
	if len(others) > 1 {
		what = "organizations"
	}
	return job.Refuse(fmt.Errorf("%s: the store %s holds %s %s, which shard %s does not take; a store holds one shard's organizations "+
		"(did the shard count change?): give this shard a store of its own (store.path, or TALLY_DB), or run it with the shard that made this store",
		sh.Source, r.Config.Store.Path, what, strings.Join(others, ", "), sh))
}

// idleShard is the run of a shard that takes none of the config's
// organizations: no step runs (a fetch would have no organization, a
// report no month), and the run is ok, its warning saying why.
func idleShard(cfg *configs.Config) job.Step {
	return func(_ context.Context, env *job.Env, _ uuid.UUID) (job.Result, error) {
		msg := fmt.Sprintf("shard %s takes none of the config's %d organizations: nothing fetched, no step run", cfg.Shard, cfg.Listed)
		env.Log.Warn().Msg(msg)
		return job.Result{Warnings: []string{msg}}, nil
	}
}

// tidyRuns, run while holding the lock, fails the runs whose process died
// without recording an outcome (nothing else can be running now) and folds
// in the runs noted in the journal. Neither stops the run: the record is
// repaired at the next run that manages.
func (r *Runner) tidyRuns(ctx context.Context, st *store.Store) {
	if n, err := st.FailUnfinished(ctx, "interrupted: its process ended before recording how the run went (killed, or the machine stopped); each window it loaded is whole, the next run fetches the rest"); err != nil {
		r.Log.Warn().Err(err).Msg("runs left running by a dead process not closed")
	} else if n > 0 {
		r.Log.Warn().Int64("runs", n).Msg("runs left running by a dead process recorded as failed")
	}
	if n, err := st.FoldJournal(ctx, r.Config.Store.Path); err != nil {
		r.Log.Warn().Err(err).Msg("runs noted beside the database not folded in yet")
	} else if n > 0 {
		r.Log.Info().Int("runs", n).Msg("runs noted beside the database folded into runs")
	}
}

// graceful returns the context a run works under: cancelled grace after
// ctx is, so work in flight when a stop is asked for may finish.
func graceful(ctx context.Context, grace time.Duration) (context.Context, context.CancelFunc) {
	run, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	stopTimer := context.AfterFunc(ctx, func() {
		t := time.NewTimer(grace)
		defer t.Stop()
		select {
		case <-t.C:
			cancel(fmt.Errorf("shutdown grace period of %s ended: %w", grace, context.Canceled))
		case <-run.Done():
		}
	})
	return run, func() {
		stopTimer()
		cancel(nil)
	}
}

// callRecovering calls fn, turning a panic into an error so the run is
// recorded as failed and its lock released like any other failure.
func callRecovering(ctx context.Context, env *job.Env, runID uuid.UUID, fn job.Step) (stats job.Result, err error) {
	defer func() {
		if p := recover(); p != nil {
			env.Log.Error().Str("panic", fmt.Sprint(p)).Str("stack", string(debug.Stack())).Msg("run panicked")
			err = fmt.Errorf("panic: %v", p)
		}
	}()
	return fn(ctx, env, runID)
}
