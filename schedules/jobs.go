package schedules

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/google/uuid"

	"github.com/tally-dev/tally/configs"
	"github.com/tally-dev/tally/reports"
)

// StepResult is what one step of a job did.
type StepResult struct {
	Rows    int64    // usage rows loaded
	Windows int      // windows loaded
	Outputs []string // files or folders written (workbooks, exports)
	// Warnings are what went wrong without failing the step; the run
	// records them.
	Warnings []string
}

// StepFunc is one step of a scheduled job (a name in schedule.jobs[].run).
// The steps of a job run in order under one run id, with the store the run
// holds. A step returns a *PartialError when some of its work failed after
// all retries and the rest is kept: the job's later steps still run, and
// the run is partial.
type StepFunc func(ctx context.Context, env *Env, runID uuid.UUID) (StepResult, error)

var (
	stepsMu sync.RWMutex
	steps   = map[string]StepFunc{
		"fetch":  fetchStep,
		"report": reportStep,
	}
)

// RegisterStep makes a step available to schedule.jobs[].run under name.
// The export step registers itself from its own file, in init, so jobs and
// the export stage need not know each other. Registering a name twice is a
// programming error and panics.
func RegisterStep(name string, fn StepFunc) {
	stepsMu.Lock()
	defer stepsMu.Unlock()
	if _, ok := steps[name]; ok {
		panic(fmt.Sprintf("schedules: step %q registered twice", name))
	}
	steps[name] = fn
}

func lookupStep(name string) (StepFunc, bool) {
	stepsMu.RLock()
	defer stepsMu.RUnlock()
	fn, ok := steps[name]
	return fn, ok
}

// stepNames lists the registered steps, sorted.
func stepNames() []string {
	stepsMu.RLock()
	defer stepsMu.RUnlock()
	names := make([]string, 0, len(steps))
	for n := range steps {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// MissingSteps lists the steps job names that this build of tally does not
// provide, so a scheduler can warn at start rather than at the first run.
func MissingSteps(job configs.Job) []string {
	var out []string
	for _, s := range job.Run {
		if _, ok := lookupStep(s); !ok {
			out = append(out, s)
		}
	}
	return out
}

// fetchStep is `tally fetch` as a step: the due windows and reference data.
func fetchStep(ctx context.Context, env *Env, runID uuid.UUID) (StepResult, error) {
	sum, err := fetchThenAlerts(ctx, env, runID, FetchOptions{})
	return StepResult{Rows: sum.Rows, Windows: sum.Loaded, Warnings: sum.Warnings}, err
}

// reportStep writes the workbooks of reports.months, as `tally run` does.
func reportStep(ctx context.Context, env *Env, _ uuid.UUID) (StepResult, error) {
	written, err := writeReports(ctx, env, nil)
	var res StepResult
	for _, w := range written {
		res.Outputs = append(res.Outputs, w.Path)
	}
	return res, err
}

// JobSummary is what one run of a scheduled job did.
type JobSummary struct {
	Run     RunOutcome
	Outputs []string
}

// RunJob runs job's steps in order as one recorded run of command (the
// scheduler's "schedule", or "run" for `tally run --job`), with the job's
// name in the run's row. A partial step does not stop the job, and the run
// is then partial. Nor does a step that refuses its part (a close whose
// month an earlier step could not load whole): the steps after it are
// independent of it and run, and the run is partial, listing the refusal
// with every other failure; only a job in which every step that ran
// refused is refused as a whole (exit 2). A step that fails stops the job,
// its error listing what failed before it. A step this build does not
// provide fails the job before anything runs.
func (r *Runner) RunJob(ctx context.Context, command string, job configs.Job) (JobSummary, error) {
	var sum JobSummary
	out, err := r.recordedRun(ctx, command, job.Name, func(ctx context.Context, env *Env, runID uuid.UUID) (runStats, error) {
		if missing := MissingSteps(job); len(missing) > 0 {
			return runStats{}, fmt.Errorf("job %q: step %s is not provided by this build of tally (it provides %s); remove it from the job's run list or use a build that has it",
				job.Name, strings.Join(missing, ", "), strings.Join(stepNames(), ", "))
		}
		var stats runStats
		var failures PartialError
		var refusal error // the first step's refusal
		worked := false   // some step did its part, whole or in part
		for _, name := range job.Run {
			if env.stopping() {
				return stats, failedAfter(fmt.Errorf("job %q stopped before step %s: shutting down: %w", job.Name, name, context.Canceled), &failures)
			}
			step, _ := lookupStep(name)
			env.Log.Info().Str("step", name).Msg("step started")
			res, err := step(withJobName(ctx, job.Name), env, runID)
			stats.rows += res.Rows
			stats.windows += res.Windows
			stats.warnings = append(stats.warnings, res.Warnings...)
			sum.Outputs = append(sum.Outputs, res.Outputs...)
			switch {
			case err == nil:
				worked = true
			case isPartial(err):
				worked = true
				failures.add(err)
			case isRefusal(err):
				err = fmt.Errorf("step %s did not do its part: %w", name, err)
				env.Log.Error().Str("step", name).Err(err).Msg("step refused; the job's next steps still run")
				failures.add(err)
				if refusal == nil {
					refusal = err
				}
			default:
				return stats, failedAfter(fmt.Errorf("step %s: %w", name, err), &failures)
			}
		}
		switch {
		case refusal != nil && !worked:
			return stats, refusal
		case failures.failed():
			return stats, &failures
		}
		return stats, nil
	})
	sum.Run = out
	return sum, err
}

// isRefusal reports whether err refuses what was asked before anything
// was touched (exit 2 from a command of its own): a close not possible, a
// month at a granularity that cannot serve it.
func isRefusal(err error) bool {
	return errors.As(err, new(*RefusedError)) || errors.As(err, new(*reports.GranularityError)) || errors.As(err, new(*EmptyMonthError))
}

// failedAfter is a run's failure err, listing what had failed before it in
// the run: the run failed (exit 1), and its error still names every
// failure, not the last.
func failedAfter(err error, before *PartialError) error {
	if !before.failed() {
		return err
	}
	return &failedRunError{err: err, before: before}
}

// failedRunError is a failed run that had partial failures first. It
// unwraps to the failure that stopped the run alone: the run failed, it is
// not partial.
type failedRunError struct {
	err    error
	before *PartialError
}

func (e *failedRunError) Error() string {
	return e.err.Error() + "\nbefore that, in this run:\n" + e.before.Error()
}

func (e *failedRunError) Unwrap() error { return e.err }
