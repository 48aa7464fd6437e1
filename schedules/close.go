package schedules

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/tally-dev/tally"
	"github.com/tally-dev/tally/configs"
	"github.com/tally-dev/tally/reports"
	"github.com/tally-dev/tally/store"
)

// CloseOptions say which month to close or reopen, by whom and why.
type CloseOptions struct {
	Month  time.Time // 1st of the month, UTC
	Reason string
	Who    string // the user ($USER) or the job
	Reopen bool
}

// CloseSummary is what a close or reopen did.
type CloseSummary struct {
	Close     store.MonthClose
	Published string
}

// RefusedError is a close or reopen that was refused because of what the
// user asked (a month not over, not fully loaded, already closed, a reopen
// without a reason): nothing was changed.
type RefusedError struct{ Reason string }

func (e *RefusedError) Error() string { return e.Reason }

func refused(format string, args ...any) error {
	return &RefusedError{Reason: fmt.Sprintf(format, args...)}
}

// CheckClose refuses, before any lock is taken, what can be refused from
// the request and the clock alone: a reopen with no reason, a month that is
// not over.
func CheckClose(o CloseOptions, now time.Time) error {
	m := o.Month.Format("2006-01")
	if o.Reopen {
		if strings.TrimSpace(o.Reason) == "" {
			return refused("--reason is required with --reopen: say why %s is reopened (it is recorded in month_closes), e.g. --reason \"late credit note from the provider\"", m)
		}
		return nil
	}
	end := o.Month.AddDate(0, 1, 0)
	if now.Before(end) {
		return refused("--month %s is not over: it ends %s UTC and it is %s UTC; a month can be closed from the day after its last day", m, end.Format(time.DateOnly), now.Format("2006-01-02 15:04"))
	}
	return nil
}

// Close is `tally close`: one recorded run that closes (or reopens) a month.
// The run holds the writer lock like a fetch, and publishes the analysts'
// copy after, so closed_month_adjustments there shows the close.
func (r *Runner) Close(ctx context.Context, o CloseOptions) (CloseSummary, error) {
	var sum CloseSummary
	now := time.Now
	if r.Now != nil {
		now = r.Now
	}
	if err := CheckClose(o, now().UTC()); err != nil {
		return sum, err
	}
	// Refused from the analysts' copy when it already says so, so a
	// refusal neither waits for the lock nor leaves a run behind. The
	// copy may lag the store; the same checks run again under the lock.
	if pub, err := store.OpenPublished(ctx, r.Config.Store.Path, false); err == nil {
		err := checkStore(ctx, pub, r.Config, o)
		pub.Close()
		var re *RefusedError
		if errors.As(err, &re) {
			return sum, err
		}
	}
	published, err := r.withRun(ctx, "close", "", func(ctx context.Context, env *Env, runID uuid.UUID) (runStats, error) {
		var err error
		sum.Close, err = closeMonth(ctx, env, runID, o)
		return runStats{}, err
	})
	sum.Published = published
	return sum, err
}

// checkStore refuses what the store says cannot be done: reopening a month
// that is not closed, closing one already closed, one with a day no loaded
// window covers, or one whose final workbook exists. It reads only, so it
// can run on the analysts' copy before the lock is taken, and again on the
// store under the lock.
func checkStore(ctx context.Context, st *store.Store, cfg *configs.Config, o CloseOptions) error {
	base := cfg.UsageQueryBase()
	basis, g := base.Basis(), cfg.Usage.Granularity
	m := o.Month.Format("2006-01")
	last, err := st.LatestClose(ctx, o.Month, basis, g)
	if err != nil {
		return err
	}
	closed := last != nil && last.Action == store.ActionClose
	if o.Reopen {
		if !closed {
			return refused("--month %s is not closed (basis %s, granularity %s): there is nothing to reopen", m, basis, g)
		}
		return nil
	}
	if closed {
		return refused("--month %s is already closed: closed %s UTC by %s (basis %s, granularity %s); to close it again, reopen it first with tally close --reopen --month %s --reason TEXT",
			m, last.At.Format("2006-01-02 15:04"), last.Who, basis, g, m)
	}
	end := o.Month.AddDate(0, 1, 0)
	missing, err := st.UncoveredDays(ctx, o.Month, end, g, basis, base.Scope())
	if err != nil {
		return err
	}
	if len(missing) > 0 {
		return refused("--month %s is not fully loaded: %d day(s) have no loaded window at granularity %s, basis %s (first %s, last %s); run tally fetch --from %s --to %s, then close",
			m, len(missing), g, basis, missing[0].Format(time.DateOnly), missing[len(missing)-1].Format(time.DateOnly),
			missing[0].Format(time.DateOnly), missing[len(missing)-1].AddDate(0, 0, 1).Format(time.DateOnly))
	}
	final := reports.FinalPath(cfg.Reports.Dir, o.Month)
	if _, err := os.Lstat(final); err == nil {
		// A final workbook is never rewritten: one left by an earlier
		// close (reopened since) is kept, and the close refused, so what
		// finance already signed stays as signed.
		return refused("--month %s: the final workbook %s already exists and is never rewritten; move it aside (keep it: it is what was signed off) and close again", m, final)
	} else if !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("close %s: %w", m, err)
	}
	return nil
}

// closeMonth closes or reopens o.Month for the config's basis and
// granularity, in the store the run holds.
func closeMonth(ctx context.Context, env *Env, runID uuid.UUID, o CloseOptions) (store.MonthClose, error) {
	cfg := env.Config
	basis, g := cfg.DefaultBasis(), cfg.Usage.Granularity
	m := o.Month.Format("2006-01")
	c := store.MonthClose{ID: runID, Month: o.Month, Basis: basis, Granularity: g, At: env.now(), Who: o.Who, Reason: o.Reason}
	if err := CheckClose(o, c.At); err != nil {
		return c, err
	}
	if err := checkStore(ctx, env.Store, cfg, o); err != nil {
		return c, err
	}
	if o.Reopen {
		c.Action = store.ActionReopen
		if err := env.Store.RecordReopen(ctx, c); err != nil {
			return c, err
		}
		env.Log.Warn().Str("month", m).Str("who", c.Who).Str("reason", c.Reason).Msg("month reopened")
		return c, nil
	}
	final := reports.FinalPath(cfg.Reports.Dir, o.Month)
	p := reports.Period{Month: o.Month, Basis: basis, Granularity: g}
	fp, err := reports.MonthFingerprint(ctx, env.Store.DB(), p)
	if err != nil {
		return c, err
	}
	opts := reports.Options{Tolerance: cfg.Reports.Tolerance, Now: env.Now, Budgets: ReportBudgets(cfg)}
	if err := reports.WriteFile(ctx, env.Store.DB(), p, final, opts); err != nil {
		return c, fmt.Errorf("close %s: %w", m, err)
	}
	c.Action, c.ContentHash, c.FinalWorkbook = store.ActionClose, fp.ContentHash, final
	figs := make([]store.CloseFigure, len(fp.Figures))
	for i, f := range fp.Figures {
		figs[i] = store.CloseFigure(f)
	}
	if err := env.Store.RecordClose(ctx, c, figs); err != nil {
		// Not recorded: the final workbook must not outlive its close, or
		// the next close would be refused for it.
		os.Remove(final)
		return c, err
	}
	env.Log.Info().Str("month", m).Int64("rows", fp.Rows).Str("content_hash", fp.ContentHash).Str("final_workbook", final).Msg("month closed")
	return c, nil
}

// closeStep closes the previous month once reports.close_after has passed
// since its end. A month already closed, or closed and reopened since (a
// reopen is a person's decision), is left alone; one that is not fully
// loaded fails the step, saying why.
func closeStep(ctx context.Context, env *Env, runID uuid.UUID) (StepResult, error) {
	cfg := env.Config
	if cfg.Reports.CloseAfter <= 0 {
		env.Log.Info().Msg("close step: reports.close_after is not set; no month is closed")
		return StepResult{}, nil
	}
	now := env.now()
	month := tally.Month.Truncate(now).AddDate(0, -1, 0)
	m := month.Format("2006-01")
	if due := month.AddDate(0, 1, 0).Add(cfg.Reports.CloseAfter); now.Before(due) {
		env.Log.Info().Str("month", m).Time("due", due).Msg("close step: not due yet")
		return StepResult{}, nil
	}
	last, err := env.Store.LatestClose(ctx, month, cfg.DefaultBasis(), cfg.Usage.Granularity)
	if err != nil {
		return StepResult{}, err
	}
	if last != nil {
		env.Log.Info().Str("month", m).Str("action", last.Action).Time("at", last.At).Msg("close step: month already closed or reopened by hand; left as it is")
		return StepResult{}, nil
	}
	c, err := closeMonth(ctx, env, runID, CloseOptions{Month: month, Who: jobName(ctx), Reason: fmt.Sprintf("reports.close_after %s passed", cfg.Reports.CloseAfter)})
	if err != nil {
		return StepResult{}, fmt.Errorf("close %s: %w", m, err)
	}
	return StepResult{Outputs: []string{c.FinalWorkbook}}, nil
}

func init() { RegisterStep("close", closeStep) }

// jobKey carries the running job's name to its steps, so a step that
// records who did something (close) can name the job.
type jobKey struct{}

func withJobName(ctx context.Context, job string) context.Context {
	return context.WithValue(ctx, jobKey{}, job)
}

// jobName is the running job's name, or "job" outside one.
func jobName(ctx context.Context) string {
	if s, _ := ctx.Value(jobKey{}).(string); s != "" {
		return s
	}
	return "job"
}
