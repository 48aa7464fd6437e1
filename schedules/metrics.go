package schedules

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/common/expfmt"

	"github.com/tally-dev/tally/internal/atomicfile"
	"github.com/tally-dev/tally/store"
)

// runStatuses are the statuses a finished run can have, in the order the
// metrics list them.
var runStatuses = []string{store.RunOK, store.RunPartial, store.RunFailed, store.RunSkipped}

// Describe and Collect make the monitor a prometheus.Collector: its facts
// are read from health() at every scrape, so they never drift from
// /healthz. Every series of a job is there even before its first run, so
// alerts on absent series are not needed.
func (m *monitor) Describe(ch chan<- *prometheus.Desc) { prometheus.DescribeByCollect(m, ch) }

func (m *monitor) Collect(ch chan<- prometheus.Metric) {
	h := m.health()
	unix := func(t time.Time) float64 { return float64(t.UnixMilli()) / 1000 }
	flag := func(ok bool) float64 {
		if ok {
			return 1
		}
		return 0
	}
	desc := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(name, help, labels, nil)
	}
	emit := func(d *prometheus.Desc, typ prometheus.ValueType, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, typ, v, labels...)
	}
	gauge, counter := prometheus.GaugeValue, prometheus.CounterValue

	m.requests.Collect(ch)
	m.retries.Collect(ch)
	m.mu.Lock()
	actual := desc("tally_budget_actual_ratio", "The month's actual cost as a fraction of the budget (1 = 100%), at the latest alert check.", "budget")
	forecast := desc("tally_budget_forecast_ratio", "The month-end forecast as a fraction of the budget (1 = 100%), at the latest alert check.", "budget")
	for name, r := range m.budgets {
		emit(actual, gauge, r[0], name)
		emit(forecast, gauge, r[1], name)
	}
	emit(desc("tally_anomalies_total", "Cost anomalies found since the scheduler started (each day, project, meter and currency once)."), counter, float64(m.anomalies))
	m.mu.Unlock()
	if h.TokenExpires != nil {
		emit(desc("tally_token_expiry_timestamp_seconds", "When the API token expires (its exp claim), as Unix time; absent for a token that does not say."), gauge, unix(*h.TokenExpires))
	}
	age := desc("tally_usage_newest_day_age_seconds", "How old the newest UTC day holding usage is (from its start to now), per organization: usage.stale_after past it, /healthz fails.", "organization")
	for _, f := range h.Freshness {
		emit(age, gauge, h.CheckedAt.Sub(f.NewestDay).Seconds(), f.Organization)
	}
	emit(desc("tally_scheduler_start_time_seconds", "When tally schedule started, as Unix time."), gauge, unix(h.Started))
	healthy := desc("tally_job_healthy", "1 while the job's latest run succeeded within its expected interval (what /healthz checks), else 0.", "job")
	running := desc("tally_job_running", "1 while a run of the job is in progress.", "job")
	next := desc("tally_job_next_run_timestamp_seconds", "When the job runs next, as Unix time.", "job")
	lastRun := desc("tally_job_last_run_timestamp_seconds", "When the job's latest run finished (or was skipped), as Unix time.", "job")
	duration := desc("tally_job_last_run_duration_seconds", "How long the job's latest run took.", "job")
	success := desc("tally_job_last_success_timestamp_seconds", "When a run of the job last succeeded, as Unix time.", "job")
	status := desc("tally_job_last_run_status", "1 for the status of the job's latest run (ok, partial, failed or skipped), 0 for the others.", "job", "status")
	runs := desc("tally_job_runs_total", "Runs of the job finished since the scheduler started, by status; skipped counts runs that gave up waiting for another process's lock.", "job", "status")
	skipped := desc("tally_job_skipped_total", "Times the job was due while its previous run was still going, so that time was skipped.", "job")
	rows := desc("tally_fetch_rows_total", "Usage rows the job's runs loaded since the scheduler started.", "job")
	for _, j := range h.Jobs {
		emit(healthy, gauge, flag(j.Healthy), j.Job)
		emit(running, gauge, flag(j.RunningSince != nil), j.Job)
		if !j.Next.IsZero() {
			emit(next, gauge, unix(j.Next), j.Job)
		}
		if j.LastRun != nil && j.LastRun.Finished != nil {
			emit(lastRun, gauge, unix(*j.LastRun.Finished), j.Job)
			emit(duration, gauge, j.LastRun.Finished.Sub(j.LastRun.Started).Seconds(), j.Job)
		}
		if j.LastSuccess != nil {
			emit(success, gauge, unix(*j.LastSuccess), j.Job)
		}
		for _, s := range runStatuses {
			emit(status, gauge, flag(j.LastRun != nil && j.LastRun.Status == s), j.Job, s)
			emit(runs, counter, float64(j.Runs[s]), j.Job, s)
		}
		emit(skipped, counter, float64(j.SkippedTicks), j.Job)
		emit(rows, counter, float64(j.Rows), j.Job)
	}
}

// metrics renders the monitor's series in the Prometheus text exposition
// format (version 0.0.4), the format node_exporter's textfile collector
// reads: Tally's own series only, as the collector has its own process and
// Go metrics.
func (m *monitor) metrics() []byte {
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(m)
	mfs, err := reg.Gather()
	var b bytes.Buffer
	if err == nil {
		for _, mf := range mfs {
			if _, err = expfmt.MetricFamilyToText(&b, mf); err != nil {
				break
			}
		}
	}
	if err != nil {
		// Only a bug (a series collected twice) gets here; say it where
		// the metrics are read rather than serve half of them.
		return []byte("# tally: metrics failed: " + strings.ReplaceAll(err.Error(), "\n", " ") + "\n")
	}
	return b.Bytes()
}

// writeMetricsFile replaces the metrics file whole (atomicfile), so the
// textfile collector never reads half a file: the temporary name does not
// end in .prom, which the collector ignores. Mode 0644: the collector runs
// as another user, and the figures are not secret.
func writeMetricsFile(path string, data []byte) error {
	err := atomicfile.Write(context.Background(), path, 0o644, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
	if err != nil {
		return fmt.Errorf("write metrics %s: %w", path, err)
	}
	return nil
}

// metricsHandler serves /metrics for a Prometheus that scrapes the
// scheduler: the monitor's series, tally_build_info, and the Go runtime and
// process metrics of the client library.
func (m *monitor) metricsHandler(version, commit string) http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(m,
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name:        "tally_build_info",
			Help:        "Always 1; the labels say which Tally is running.",
			ConstLabels: prometheus.Labels{"version": version, "commit": commit, "goversion": runtime.Version()},
		}, func() float64 { return 1 }),
	)
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
}
