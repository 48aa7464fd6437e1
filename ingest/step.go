package ingest

import (
	"context"
	"errors"

	"github.com/google/uuid"

	"github.com/tally-dev/tally/alerts"
	"github.com/tally-dev/tally/job"
)

func init() { job.Register("fetch", Step(FetchOptions{}, nil)) }

// Step is a fetch with opts as a step of a run: the due windows and the
// reference data, then the alerts (FetchThenAlerts). When sum is not nil it receives what the fetch did, for
// a command to print.
func Step(opts FetchOptions, sum *FetchSummary) job.Step {
	return func(ctx context.Context, env *job.Env, runID uuid.UUID) (job.Result, error) {
		s, err := FetchThenAlerts(ctx, env, runID, opts)
		if sum != nil {
			*sum = s
		}
		return job.Result{Rows: s.Rows, Windows: s.Loaded, Warnings: s.Warnings}, err
	}
}

// FetchThenAlerts is a fetch followed by the alerts step's work
// (alerts.CheckAndSend), as every fetch is: a budget crossed or a day that
// jumped is news the morning it is fetched. It follows a fetch that loaded
// what it could, whole or in part. An alert not sent after its tries makes
// the fetch partial; a check that failed fails it.
func FetchThenAlerts(ctx context.Context, env *job.Env, runID uuid.UUID, opts FetchOptions) (FetchSummary, error) {
	sum, err := Fetch(ctx, env, runID, opts)
	var partial *job.Partial
	if err != nil && !errors.As(err, &partial) {
		return sum, err
	}
	check, alertErr := alerts.CheckAndSend(ctx, env, runID)
	sum.Alerts = check
	switch {
	case alertErr == nil:
		return sum, err
	case !errors.As(alertErr, new(*alerts.SendError)):
		return sum, alertErr
	case partial == nil:
		return sum, job.StepErrors(alertErr)
	}
	partial.Add(alertErr)
	return sum, partial
}

// Command is the command a fetch with opts is recorded as in runs: fetch,
// or refetch for --refetch.
func Command(opts FetchOptions) string {
	if opts.Refetch {
		return "refetch"
	}
	return "fetch"
}
