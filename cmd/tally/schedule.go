package main

import (
	"net"
	"os"
	"path/filepath"
	_ "time/tzdata" // CRON_TZ zones resolve in images without /usr/share/zoneinfo

	"github.com/spf13/cobra"

	"github.com/tally-dev/tally/alerts"
	"github.com/tally-dev/tally/configs"
	"github.com/tally-dev/tally/schedules"
)

func init() { commands = append(commands, newScheduleCmd) }

func newScheduleCmd(g *globalFlags) *cobra.Command {
	var cfgPath, shardText string
	var opts schedules.ScheduleOptions
	cmd := &cobra.Command{
		Use:   "schedule --config FILE [--health-addr HOST:PORT] [--metrics-file FILE.prom] [--shard I/N]",
		Short: "Stay up and run the configured jobs on their cron schedules",
		Long: `Runs schedule.jobs on their cron schedules (UTC unless a spec starts with
CRON_TZ=<zone>) until SIGTERM or SIGINT. Each job's steps (fetch, report,
export) run in order as one recorded run. A job still running when its next
time comes skips that time; a job finding another process's run holding the
database waits up to schedule.lock_wait and then records a skipped run naming
the holder. On SIGTERM or SIGINT no job starts; a running one may finish
within schedule.grace, then is cancelled and rolls back; the exit is 0.
A second signal stops at once; what was in flight rolls back.

--health-addr serves /healthz (200 while every job's latest run succeeded
within its expected interval, 503 otherwise, JSON details either way) and
/metrics. --metrics-file writes the same facts in the Prometheus text format
for node_exporter's textfile collector.

--shard I/N (or TALLY_SHARD; /N with JOB_COMPLETION_INDEX) runs every job
over the organizations of shard I of N only, as tally run --shard does.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkScheduleFlags(opts); err != nil {
				return err
			}
			shard, err := resolveShard(cmd, shardText)
			if err != nil {
				return err
			}
			r, err := newRunner(cmd, g, cfgPath, func(cfg *configs.Config) []string {
				var steps []string
				for _, j := range cfg.Schedule.Jobs {
					steps = append(steps, j.Run...)
				}
				return steps
			}, shard)
			if err != nil {
				return err
			}
			opts.Staleness = alerts.Staleness
			s, err := schedules.NewScheduler(r, opts)
			if err != nil {
				return usageError{err}
			}
			return s.Run(cmd.Context())
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfgPath, "config", "", "config file (YAML)")
	f.StringVar(&opts.HealthAddr, "health-addr", "", "serve /healthz and /metrics on this address, e.g. 127.0.0.1:9090 or :9090")
	f.StringVar(&opts.MetricsFile, "metrics-file", "", "write Prometheus text-format metrics to this file (for node_exporter's textfile collector, e.g. /var/lib/node_exporter/textfile/tally.prom)")
	addShard(cmd, &shardText)
	return cmd
}

// checkScheduleFlags refuses flag values that cannot work before anything
// starts.
func checkScheduleFlags(o schedules.ScheduleOptions) error {
	if o.HealthAddr != "" {
		if _, port, err := net.SplitHostPort(o.HealthAddr); err != nil || port == "" {
			return usageErr("--health-addr %q is not HOST:PORT, e.g. 127.0.0.1:9090 or :9090", o.HealthAddr)
		}
	}
	if o.MetricsFile != "" {
		dir := filepath.Dir(o.MetricsFile)
		if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
			return usageErr("--metrics-file %q: folder %s does not exist; create it or point the flag elsewhere", o.MetricsFile, dir)
		}
		if fi, err := os.Stat(o.MetricsFile); err == nil && fi.IsDir() {
			return usageErr("--metrics-file %q is a folder; give a file name such as %s", o.MetricsFile, filepath.Join(o.MetricsFile, "tally.prom"))
		}
	}
	return nil
}
