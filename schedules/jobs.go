package schedules

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/google/uuid"

	"github.com/tally-dev/tally/configs"
	"github.com/tally-dev/tally/job"
)

// JobSummary is what one run of a scheduled job did.
type JobSummary struct {
	Run     RunOutcome
	Outputs []string
}

// RunJob runs j's steps in order as one recorded run of command (the
// scheduler's "schedule", or "run" for `tally run --job`), with the job's
// name in the run's row. A step this build does not provide fails the job
// before anything runs.
func (r *Runner) RunJob(ctx context.Context, command string, j configs.Job) (JobSummary, error) {
	var sum JobSummary
	out, err := r.Record(ctx, command, j.Name, func(ctx context.Context, env *job.Env, runID uuid.UUID) (job.Result, error) {
		if missing := job.Missing(j.Run); len(missing) > 0 {
			return job.Result{}, fmt.Errorf("job %q: step %s is not provided by this build of tally (it provides %s); remove it from the job's run list or use a build that has it",
				j.Name, strings.Join(missing, ", "), strings.Join(job.Names(), ", "))
		}
		steps := make([]job.Named, len(j.Run))
		for i, name := range j.Run {
			steps[i].Name = name
			steps[i].Step, _ = job.Lookup(name)
		}
		return runSteps(ctx, env, runID, j.Name, steps, &sum.Outputs)
	})
	sum.Run = out
	return sum, err
}

// Run runs steps in order as one recorded run of command, under job's name
// ("" for none), on the path every job's steps take (runSteps): what a
// command that is a job of its own (tally run) calls with its steps.
func (r *Runner) Run(ctx context.Context, command, jobName string, steps ...job.Named) (JobSummary, error) {
	var sum JobSummary
	out, err := r.Record(ctx, command, jobName, func(ctx context.Context, env *job.Env, runID uuid.UUID) (job.Result, error) {
		return runSteps(ctx, env, runID, jobName, steps, &sum.Outputs)
	})
	sum.Run = out
	return sum, err
}

// Nightly is `tally run`: steps under one run id, on the path every job's
// steps take (Run). With one job configured (the default nightly, or one
// whose steps are these), the run is that job's: recorded under its name,
// so tally status does not say the job never ran.
func (r *Runner) Nightly(ctx context.Context, steps ...job.Named) (JobSummary, error) {
	name := ""
	if jobs := r.Config.Schedule.Jobs; len(jobs) == 1 {
		name = jobs[0].Name
	}
	return r.Run(ctx, "run", name, steps...)
}

// runSteps is the one path every run's steps take, a scheduled job's and
// `tally run`'s alike. A partial step does not stop the job, and the run
// is then partial. Nor does a step that refuses its part (a close whose
// month an earlier step could not load whole): the steps after it are
// independent of it and run, and the run is partial, listing the refusal
// with every other failure; only a job in which every step that ran
// refused is refused as a whole (exit 2). A step that fails stops the job,
// its error listing what failed before it.
func runSteps(ctx context.Context, env *job.Env, runID uuid.UUID, name string, steps []job.Named, outputs *[]string) (job.Result, error) {
	var stats job.Result
	var failures job.Partial
	var refusal error // the first step's refusal
	worked := false   // some step did its part, whole or in part
	ctx = job.WithName(ctx, name)
	for _, s := range steps {
		if env.Stopping() {
			return stats, job.FailedAfter(fmt.Errorf("job %q stopped before step %s: shutting down: %w", name, s.Name, context.Canceled), &failures)
		}
		env.Log.Info().Str("step", s.Name).Msg("step started")
		res, err := s.Step(ctx, env, runID)
		stats.Rows += res.Rows
		stats.Windows += res.Windows
		stats.Warnings = append(stats.Warnings, res.Warnings...)
		*outputs = append(*outputs, res.Outputs...)
		switch {
		case err == nil:
			worked = true
		case isPartial(err):
			worked = true
			failures.Add(err)
		case job.IsRefusal(err):
			err = fmt.Errorf("step %s did not do its part: %w", s.Name, err)
			env.Log.Error().Str("step", s.Name).Err(err).Msg("step refused; the job's next steps still run")
			failures.Add(err)
			if refusal == nil {
				refusal = err
			}
		default:
			return stats, job.FailedAfter(fmt.Errorf("step %s: %w", s.Name, err), &failures)
		}
	}
	switch {
	case refusal != nil && !worked:
		return stats, refusal
	case failures.Failed():
		return stats, &failures
	}
	return stats, nil
}

// isPartial reports whether err is a step's partial result, some of its
// work done.
func isPartial(err error) bool {
	var p *job.Partial
	return errors.As(err, &p)
}
