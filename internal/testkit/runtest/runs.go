package runtest

import (
	"context"

	"github.com/google/uuid"

	"github.com/tally-dev/tally/ingest"
	"github.com/tally-dev/tally/job"
	"github.com/tally-dev/tally/reports"
	"github.com/tally-dev/tally/schedules"
)

// NightlySummary is what RunNightly did.
type NightlySummary struct {
	RunID   uuid.UUID
	Fetch   ingest.FetchSummary
	Reports []reports.Written
}

// RunNightly is `tally run` on r as the command line runs it: the steps
// fetch and report (of months, nil: reports.months) under one run id,
// recorded under the only job's name when the config has one.
func RunNightly(ctx context.Context, r *schedules.Runner, months []string) (NightlySummary, error) {
	var sum NightlySummary
	name := ""
	if jobs := r.Config.Schedule.Jobs; len(jobs) == 1 {
		name = jobs[0].Name
	}
	report := func(ctx context.Context, env *job.Env, _ uuid.UUID) (job.Result, error) {
		var err error
		sum.Reports, err = reports.WriteMonths(ctx, env, months)
		return job.Result{}, err
	}
	run, err := r.Run(ctx, "run", name, job.Named{Name: "fetch", Step: ingest.Step(ingest.FetchOptions{}, &sum.Fetch)}, job.Named{Name: "report", Step: report})
	sum.RunID, sum.Fetch.Published = run.Run.ID, run.Run.Published
	return sum, err
}
