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
// fetch and report (of months, nil: reports.months) under one run id
// (Runner.Nightly).
func RunNightly(ctx context.Context, r *schedules.Runner, months []string) (NightlySummary, error) {
	var sum NightlySummary
	run, err := r.Nightly(ctx, job.Named{Name: "fetch", Step: ingest.Step(ingest.FetchOptions{}, &sum.Fetch)}, job.Named{Name: "report", Step: reports.Step(months, &sum.Reports)})
	sum.RunID, sum.Fetch.Published = run.Run.ID, run.Run.Published
	return sum, err
}
