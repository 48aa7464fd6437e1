package schedules

import (
	"context"

	"github.com/google/uuid"

	"github.com/tally-dev/tally/job"
	"github.com/tally-dev/tally/reports"
)

// NightlySummary is what `tally run` did.
type NightlySummary struct {
	RunID   uuid.UUID
	Fetch   FetchSummary
	Reports []reports.Written
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
		sum.Reports, err = reports.WriteMonths(ctx, env, months)
		return job.Result{}, err
	}
	run, err := r.Run(ctx, "run", name, job.Named{Name: "fetch", Step: fetch}, job.Named{Name: "report", Step: report})
	sum.RunID, sum.Fetch.Published = run.Run.ID, run.Run.Published
	return sum, err
}
