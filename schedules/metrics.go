package schedules

import (
	"bytes"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/tally-dev/tally/store"
)

// runStatuses are the statuses a finished run can have, in the order the
// metrics list them.
var runStatuses = []string{store.RunOK, store.RunPartial, store.RunFailed, store.RunSkipped}

// metrics renders the monitor's facts in the Prometheus text exposition
// format (version 0.0.4), the format node_exporter's textfile collector
// reads. Every series of a job is written even before its first run, so
// alerts on absent series are not needed.
func (m *monitor) metrics() []byte {
	h := m.health()
	var b bytes.Buffer
	family := func(name, typ, help string) {
		fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, typ)
	}
	sample := func(name string, v float64, labels ...string) {
		b.WriteString(name)
		if len(labels) > 0 {
			b.WriteByte('{')
			for i := 0; i+1 < len(labels); i += 2 {
				if i > 0 {
					b.WriteByte(',')
				}
				fmt.Fprintf(&b, "%s=\"%s\"", labels[i], escapeLabel(labels[i+1]))
			}
			b.WriteByte('}')
		}
		b.WriteByte(' ')
		b.WriteString(strconv.FormatFloat(v, 'f', -1, 64))
		b.WriteByte('\n')
	}
	unix := func(t time.Time) float64 { return float64(t.UnixMilli()) / 1000 }
	flag := func(ok bool) float64 {
		if ok {
			return 1
		}
		return 0
	}

	family("tally_scheduler_start_time_seconds", "gauge", "When tally schedule started, as Unix time.")
	sample("tally_scheduler_start_time_seconds", unix(h.Started))
	family("tally_job_healthy", "gauge", "1 while the job's latest run succeeded within its expected interval (what /healthz checks), else 0.")
	for _, j := range h.Jobs {
		sample("tally_job_healthy", flag(j.Healthy), "job", j.Job)
	}
	family("tally_job_running", "gauge", "1 while a run of the job is in progress.")
	for _, j := range h.Jobs {
		sample("tally_job_running", flag(j.RunningSince != nil), "job", j.Job)
	}
	family("tally_job_next_run_timestamp_seconds", "gauge", "When the job runs next, as Unix time.")
	for _, j := range h.Jobs {
		if !j.Next.IsZero() {
			sample("tally_job_next_run_timestamp_seconds", unix(j.Next), "job", j.Job)
		}
	}
	family("tally_job_last_run_timestamp_seconds", "gauge", "When the job's latest run finished (or was skipped), as Unix time.")
	for _, j := range h.Jobs {
		if j.LastRun != nil && j.LastRun.Finished != nil {
			sample("tally_job_last_run_timestamp_seconds", unix(*j.LastRun.Finished), "job", j.Job)
		}
	}
	family("tally_job_last_run_duration_seconds", "gauge", "How long the job's latest run took.")
	for _, j := range h.Jobs {
		if j.LastRun != nil && j.LastRun.Finished != nil {
			sample("tally_job_last_run_duration_seconds", j.LastRun.Finished.Sub(j.LastRun.Started).Seconds(), "job", j.Job)
		}
	}
	family("tally_job_last_success_timestamp_seconds", "gauge", "When a run of the job last succeeded, as Unix time.")
	for _, j := range h.Jobs {
		if j.LastSuccess != nil {
			sample("tally_job_last_success_timestamp_seconds", unix(*j.LastSuccess), "job", j.Job)
		}
	}
	family("tally_job_last_run_status", "gauge", "1 for the status of the job's latest run (ok, partial, failed or skipped), 0 for the others.")
	for _, j := range h.Jobs {
		for _, s := range runStatuses {
			sample("tally_job_last_run_status", flag(j.LastRun != nil && j.LastRun.Status == s), "job", j.Job, "status", s)
		}
	}
	family("tally_job_runs_total", "counter", "Runs of the job finished since the scheduler started, by status; skipped counts runs that gave up waiting for another process's lock.")
	for _, j := range h.Jobs {
		for _, s := range runStatuses {
			sample("tally_job_runs_total", float64(j.Runs[s]), "job", j.Job, "status", s)
		}
	}
	family("tally_job_skipped_total", "counter", "Times the job was due while its previous run was still going, so that time was skipped.")
	for _, j := range h.Jobs {
		sample("tally_job_skipped_total", float64(j.SkippedTicks), "job", j.Job)
	}
	family("tally_fetch_rows_total", "counter", "Usage rows the job's runs loaded since the scheduler started.")
	for _, j := range h.Jobs {
		sample("tally_fetch_rows_total", float64(j.Rows), "job", j.Job)
	}
	return b.Bytes()
}

// escapeLabel escapes a label value as the text format requires.
func escapeLabel(s string) string {
	return strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(s)
}

// writeMetricsFile writes the metrics to path atomically: to a temp file in
// the same folder, then renamed, so the textfile collector never reads half
// a file. The temp name does not end in .prom, which the collector ignores.
func writeMetricsFile(path string, data []byte) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return fmt.Errorf("write metrics %s: %w", path, err)
	}
	defer os.Remove(tmp.Name()) // after a successful rename there is nothing left to remove
	_, werr := tmp.Write(data)
	// The collector runs as another user; the figures are not secret.
	cherr := tmp.Chmod(0o644)
	serr := tmp.Sync()
	cerr := tmp.Close()
	if err := firstErr(werr, cherr, serr, cerr); err != nil {
		return fmt.Errorf("write metrics %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write metrics %s: %w", path, err)
	}
	return nil
}

func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// metricsHandler serves the same text at /metrics, for a Prometheus that
// scrapes the scheduler directly.
func (m *monitor) metricsHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		w.Write(m.metrics())
	})
}
