package ingest

import (
	"context"

	"github.com/google/uuid"

	"github.com/tally-dev/tally/job"
)

func init() { job.Register("fetch", Step(FetchOptions{}, nil)) }

// Step is a fetch with opts as a step of a run: the due windows and the
// reference data. When sum is not nil it receives what the fetch did, for
// a command to print.
func Step(opts FetchOptions, sum *FetchSummary) job.Step {
	return func(ctx context.Context, env *job.Env, runID uuid.UUID) (job.Result, error) {
		s, err := Fetch(ctx, env, runID, opts)
		if sum != nil {
			*sum = s
		}
		return job.Result{Rows: s.Rows, Windows: s.Loaded, Warnings: s.Warnings}, err
	}
}

// Command is the command a fetch with opts is recorded as in runs: fetch,
// or refetch for --refetch.
func Command(opts FetchOptions) string {
	if opts.Refetch {
		return "refetch"
	}
	return "fetch"
}
