package schedules

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/tally-dev/tally"
	"github.com/tally-dev/tally/job"
	"github.com/tally-dev/tally/reports"
)

// ReportMonths resolves reports.months ("previous", "current" or YYYY-MM)
// against today: the previous month is final, the current one month to date.
func ReportMonths(names []string, now time.Time) ([]time.Time, error) {
	this := tally.Month.Truncate(now)
	var out []time.Time
	for _, n := range names {
		switch n {
		case "previous":
			out = append(out, this.AddDate(0, -1, 0))
		case "current":
			out = append(out, this)
		default:
			m, err := reports.ParseMonth(n)
			if err != nil {
				return nil, fmt.Errorf("reports.months: %w", err)
			}
			out = append(out, m)
		}
	}
	return out, nil
}

// WrittenReport is one workbook a run wrote.
type WrittenReport struct {
	Month time.Time
	Path  string
	// Organization is whose workbook it is, "" for the store's (with
	// organizations:, the group's).
	Organization string
}

// NightlySummary is what `tally run` did.
type NightlySummary struct {
	RunID   uuid.UUID
	Fetch   FetchSummary
	Reports []WrittenReport
}

// Nightly is `tally run`: the steps fetch and report under one run id, on
// the path every job's steps take (runSteps). Reports are written even when
// some windows failed (the workbook's Summary shows how fresh the data
// is), and the run is then partial.
func (r *Runner) Nightly(ctx context.Context, months []string) (NightlySummary, error) {
	var sum NightlySummary
	// With one job configured (the default nightly, or one whose steps are
	// these), this run is that job's: recorded under its name, so tally
	// status does not say the job never ran.
	name := ""
	if jobs := r.Config.Schedule.Jobs; len(jobs) == 1 {
		name = jobs[0].Name
	}
	fetch := func(ctx context.Context, env *job.Env, runID uuid.UUID) (job.Result, error) {
		var err error
		sum.Fetch, err = fetchThenAlerts(ctx, env, runID, FetchOptions{})
		return job.Result{Rows: sum.Fetch.Rows, Windows: sum.Fetch.Loaded, Warnings: sum.Fetch.Warnings}, err
	}
	report := func(ctx context.Context, env *job.Env, _ uuid.UUID) (job.Result, error) {
		var err error
		sum.Reports, err = writeReports(ctx, env, months)
		return job.Result{}, err
	}
	run, err := r.Run(ctx, "run", name, job.Named{Name: "fetch", Step: fetch}, job.Named{Name: "report", Step: report})
	sum.RunID, sum.Fetch.Published = run.Run.ID, run.Run.Published
	return sum, err
}

// writeReports writes one workbook per configured month from the store the
// run holds.
func writeReports(ctx context.Context, env *job.Env, months []string) ([]WrittenReport, error) {
	cfg := env.Config
	if months == nil {
		months = cfg.Reports.Months
	}
	ms, err := ReportMonths(months, env.Today())
	if err != nil {
		return nil, err
	}
	// A replay's Budgets sheets are as of the replay's morning.
	src, release, err := env.Store.AsOfSource(ctx, env.AsOf)
	if err != nil {
		return nil, err
	}
	defer release()
	var out []WrittenReport
	for _, m := range ms {
		path := reports.DefaultPath(cfg.Reports.Dir, m)
		_, err := Report(ctx, cfg, src, m, "", path, env.Today, env.Log)
		var empty *EmptyMonthError
		if errors.As(err, &empty) {
			// A new deployment's first days, the 1st before any usage:
			// said, not a failure.
			env.Log.Warn().Str("month", m.Format("2006-01")).Str("basis", string(empty.Period.Basis)).
				Str("granularity", string(empty.Period.Granularity)).Msg("no usage rows for this month: no workbook written")
			continue
		}
		if err != nil {
			return out, err
		}
		out = append(out, WrittenReport{Month: m, Path: path})
		if !cfg.Grouped() {
			continue
		}
		// And each organization's own workbook, beside the group's.
		for _, org := range cfg.Organizations {
			path := reports.OrgPath(cfg.Reports.Dir, m, org.Name)
			_, err := ReportOrg(ctx, cfg, src, m, "", org.Name, path, env.Today, env.Log)
			if errors.As(err, &empty) {
				continue
			}
			if err != nil {
				return out, err
			}
			out = append(out, WrittenReport{Month: m, Path: path, Organization: org.Name})
		}
	}
	return out, nil
}
