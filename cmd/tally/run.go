package main

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/google/uuid"

	"github.com/spf13/cobra"

	"github.com/tally-dev/tally/configs"
	"github.com/tally-dev/tally/ingest"
	"github.com/tally-dev/tally/job"
	"github.com/tally-dev/tally/reports"
	"github.com/tally-dev/tally/schedules"
)

func init() { commands = append(commands, newRunCmd) }

func newRunCmd(g *globalFlags) *cobra.Command {
	var cfgPath, jobName, asOfText, shardText string
	cmd := &cobra.Command{
		Use:   "run --config FILE [--job NAME] [--as-of DATE] [--shard I/N]",
		Short: "The nightly job: fetch, then the configured reports",
		Long: `Fetches the due windows and reference data, then writes the workbooks of
reports.months (by default the previous month, final, and the current month to
date), all under one run id. Exit 3 when some windows failed after all
retries: the workbooks are still written and the next run fetches the rest.
In a job, a step that cannot do its part because an earlier one partly
failed (a close of a month not fully loaded) makes the run partial too
(exit 3) and the steps after it still run; the error lists every failure.

With --job, runs that job of schedule.jobs once instead (its steps, recorded
under its name, so tally status shows it): what a crontab line, systemd timer
or Kubernetes CronJob calls when it, not tally schedule, keeps the time.
Without --job, a config whose schedule.jobs names one job runs that job (all
its steps: close, deliver, alerts… included); one that names several is
refused (exit 2) with their names, since no step may be skipped silently.

With --shard I/N (or TALLY_SHARD), the run takes only the organizations of
organizations: whose FNV-1a 64-bit hash of their name, modulo N, is I; /N
takes I from JOB_COMPLETION_INDEX (a Kubernetes Indexed Job). A shard that
takes none does nothing and exits 0; a store holding an organization of
another shard is refused (exit 2). See docs/operators.md "Shards".`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			asOf, err := resolveAsOf(asOfText)
			if err != nil {
				return err
			}
			shard, err := resolveShard(cmd, shardText)
			if err != nil {
				return err
			}
			r, err := newRunner(cmd, g, cfgPath, func(cfg *configs.Config) []string { return runSteps(cfg, jobName) }, shard)
			if err != nil {
				return err
			}
			withAsOf(r, asOf)
			if jobName != "" {
				return runJob(cmd, r, jobName)
			}
			switch jobs := r.Config.Schedule.Jobs; {
			case len(jobs) > 1:
				var names []string
				for _, j := range jobs {
					names = append(names, j.Name)
				}
				return usageErr("--job is required: schedule.jobs has %d jobs (%s); say which to run, e.g. tally run --config %s --job %s", len(jobs), strings.Join(names, ", "), cfgPath, names[0])
			case len(jobs) == 1 && !slices.Equal(jobs[0].Run, configs.DefaultJobs()[0].Run):
				return runJob(cmd, r, jobs[0].Name)
			}
			sum, err := nightly(cmd.Context(), r, nil)
			printFetchSummary(cmd, sum.Fetch)
			for _, w := range sum.Reports {
				fmt.Fprintf(cmd.OutOrStdout(), "report %s: %s\n", w.Month.Format("2006-01"), w.Path)
			}
			return err
		},
	}
	cmd.Flags().StringVar(&cfgPath, "config", "", "config file (YAML)")
	cmd.Flags().StringVar(&jobName, "job", "", "run this job of schedule.jobs once")
	addAsOf(cmd, &asOfText)
	addShard(cmd, &shardText)
	return cmd
}

// runSteps are the steps `tally run` runs with this config and --job: the
// job's, the only job's when it is not the default, else the default run's
// (fetch, report). A job that is not there, or several without --job, are
// refused after the config loads; their steps are none.
func runSteps(cfg *configs.Config, jobName string) []string {
	jobs := cfg.Schedule.Jobs
	switch {
	case jobName != "":
		for _, j := range jobs {
			if j.Name == jobName {
				return j.Run
			}
		}
		return nil
	case len(jobs) > 1:
		return nil
	case len(jobs) == 1:
		return jobs[0].Run
	}
	return configs.DefaultJobs()[0].Run
}

// runJob is `tally run --job NAME`.
func runJob(cmd *cobra.Command, r *schedules.Runner, name string) error {
	var names []string
	for _, j := range r.Config.Schedule.Jobs {
		if j.Name == name {
			sum, err := r.RunJob(cmd.Context(), "run", j)
			if sum.Run.ID != uuid.Nil {
				fmt.Fprintf(cmd.OutOrStdout(), "run %s: job %s %s, %d rows, %d windows\n", sum.Run.ID, name, sum.Run.Status, sum.Run.Rows, sum.Run.Windows)
			}
			for _, o := range sum.Outputs {
				fmt.Fprintf(cmd.OutOrStdout(), "wrote %s\n", o)
			}
			return err
		}
		names = append(names, j.Name)
	}
	return usageErr("--job %q is not a job of schedule.jobs; the jobs are: %s", name, strings.Join(names, ", "))
}

// nightlySummary is what `tally run` did.
type nightlySummary struct {
	RunID   uuid.UUID
	Fetch   ingest.FetchSummary
	Reports []reports.Written
}

// nightly is `tally run`: the steps fetch and report under one run id
// (Runner.Nightly). Reports are written even when some windows failed
// (the workbook's Summary shows how fresh the data is), and the run is
// then partial. months nil: reports.months.
func nightly(ctx context.Context, r *schedules.Runner, months []string) (nightlySummary, error) {
	var sum nightlySummary
	run, err := r.Nightly(ctx, job.Named{Name: "fetch", Step: ingest.Step(ingest.FetchOptions{}, &sum.Fetch)}, job.Named{Name: "report", Step: reports.Step(months, &sum.Reports)})
	sum.RunID, sum.Fetch.Published = run.Run.ID, run.Run.Published
	return sum, err
}
