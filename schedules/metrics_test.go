package schedules

import (
	"bufio"
	"bytes"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/robfig/cron/v3"

	"github.com/tally-dev/tally"
	"github.com/tally-dev/tally/alerts"
	"github.com/tally-dev/tally/configs"
	_ "github.com/tally-dev/tally/ingest"  // registers the step fetch, which these jobs name
	_ "github.com/tally-dev/tally/reports" // registers the step report
	"github.com/tally-dev/tally/store"
)

// promSample is one sample line of the text format.
type promSample struct {
	name   string
	labels map[string]string
	value  float64
}

var (
	promName  = `[a-zA-Z_:][a-zA-Z0-9_:]*`
	promLine  = regexp.MustCompile(`^(` + promName + `)(?:\{(.*)\})? (\S+)$`)
	promLabel = regexp.MustCompile(`^([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"(,|$)`)
	promMeta  = regexp.MustCompile(`^# (HELP|TYPE) (` + promName + `) (.+)$`)
)

// parseProm reads the Prometheus text exposition format strictly enough to
// catch what node_exporter would refuse: a sample before its TYPE, a
// family declared twice, a bad label, a value that is not a number.
func parseProm(t *testing.T, text []byte) []promSample {
	t.Helper()
	typed := map[string]string{}
	helped := map[string]bool{}
	var out []promSample
	sc := bufio.NewScanner(bytes.NewReader(text))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if m := promMeta.FindStringSubmatch(line); m != nil {
			switch m[1] {
			case "HELP":
				if helped[m[2]] {
					t.Fatalf("line %d: HELP of %s twice", n, m[2])
				}
				helped[m[2]] = true
			case "TYPE":
				if _, ok := typed[m[2]]; ok {
					t.Fatalf("line %d: TYPE of %s twice", n, m[2])
				}
				if m[3] != "gauge" && m[3] != "counter" {
					t.Fatalf("line %d: type %q", n, m[3])
				}
				if m[3] == "counter" && !strings.HasSuffix(m[2], "_total") {
					t.Fatalf("line %d: counter %s does not end in _total", n, m[2])
				}
				typed[m[2]] = m[3]
			}
			continue
		}
		m := promLine.FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("line %d is not a sample: %q", n, line)
		}
		if _, ok := typed[m[1]]; !ok {
			t.Fatalf("line %d: sample of %s before its TYPE", n, m[1])
		}
		s := promSample{name: m[1], labels: map[string]string{}}
		for rest := m[2]; rest != ""; {
			lm := promLabel.FindStringSubmatch(rest)
			if lm == nil {
				t.Fatalf("line %d: bad labels %q", n, m[2])
			}
			v, err := strconv.Unquote(`"` + lm[2] + `"`)
			if err != nil {
				t.Fatalf("line %d: label value %q: %v", n, lm[2], err)
			}
			s.labels[lm[1]] = v
			rest = rest[len(lm[0]):]
		}
		var err error
		if s.value, err = strconv.ParseFloat(m[3], 64); err != nil {
			t.Fatalf("line %d: value %q", n, m[3])
		}
		out = append(out, s)
	}
	if !bytes.HasSuffix(text, []byte("\n")) {
		t.Fatal("the text does not end with a newline")
	}
	return out
}

func promValue(samples []promSample, name string, labels ...string) (float64, bool) {
next:
	for _, s := range samples {
		if s.name != name {
			continue
		}
		for i := 0; i+1 < len(labels); i += 2 {
			if s.labels[labels[i]] != labels[i+1] {
				continue next
			}
		}
		return s.value, true
	}
	return 0, false
}

// The metrics carry what /healthz says, in a format the textfile
// collector reads, with any job name escaped.
func TestMetricsText(t *testing.T) {
	now := time.Date(2026, 3, 5, 3, 0, 0, 0, time.UTC)
	odd := "night\"ly\\ job\n2"
	jobs := []configs.Job{
		{Name: odd, Cron: "CRON_TZ=UTC 30 2 * * *", Run: []string{"fetch"}},
		{Name: "weekly", Cron: "@weekly", Run: []string{"fetch", "report"}},
	}
	m := newMonitor(jobs, []cron.Schedule{mustCron(t, jobs[0].Cron), mustCron(t, jobs[1].Cron)}, time.Minute, func() time.Time { return now })
	started := time.Date(2026, 3, 5, 2, 30, 0, 0, time.UTC)
	fin := started.Add(90 * time.Second)
	m.runFinished(odd, store.RunInfo{ID: uuid.New(), Job: odd, Command: "schedule", Started: started, Finished: &fin, Status: store.RunOK, Rows: 1234, Windows: 3})
	m.runFinished(odd, store.RunInfo{ID: uuid.New(), Job: odd, Command: "schedule", Started: started.Add(time.Minute), Finished: &fin, Status: store.RunSkipped, Error: "locked"})
	m.tickSkipped(odd)
	m.tickSkipped(odd)
	m.runStarted("weekly")
	platform := configs.Budget{Name: "platform", ScopeKind: "all", Currency: "USD", Amount: tally.MustDecimal("200")}
	m.alertsChecked(alerts.Check{Anomalies: 2, Budgets: []alerts.BudgetStatus{
		{Budget: platform, Found: true, Actual: tally.MustDecimal("50"), Forecast: tally.MustDecimal("250")}}})
	m.alertsChecked(alerts.Check{Anomalies: 1, Budgets: []alerts.BudgetStatus{
		{Budget: platform, Found: true, Actual: tally.MustDecimal("100"), Forecast: tally.MustDecimal("210")}}})

	samples := parseProm(t, m.metrics())
	want := []struct {
		name   string
		labels []string
		value  float64
	}{
		{"tally_job_healthy", []string{"job", odd}, 0},
		{"tally_job_healthy", []string{"job", "weekly"}, 1},
		{"tally_job_running", []string{"job", "weekly"}, 1},
		{"tally_job_running", []string{"job", odd}, 0},
		{"tally_job_next_run_timestamp_seconds", []string{"job", odd}, float64(time.Date(2026, 3, 6, 2, 30, 0, 0, time.UTC).Unix())},
		{"tally_job_next_run_timestamp_seconds", []string{"job", "weekly"}, float64(time.Date(2026, 3, 8, 0, 0, 0, 0, time.UTC).Unix())},
		{"tally_job_last_run_timestamp_seconds", []string{"job", odd}, float64(fin.Unix())},
		{"tally_job_last_success_timestamp_seconds", []string{"job", odd}, float64(fin.Unix())},
		{"tally_job_last_run_status", []string{"job", odd, "status", "skipped"}, 1},
		{"tally_job_last_run_status", []string{"job", odd, "status", "ok"}, 0},
		{"tally_job_last_run_status", []string{"job", "weekly", "status", "ok"}, 0},
		{"tally_job_runs_total", []string{"job", odd, "status", "ok"}, 1},
		{"tally_job_runs_total", []string{"job", odd, "status", "skipped"}, 1},
		{"tally_job_runs_total", []string{"job", odd, "status", "failed"}, 0},
		{"tally_job_runs_total", []string{"job", "weekly", "status", "partial"}, 0},
		{"tally_job_skipped_total", []string{"job", odd}, 2},
		{"tally_fetch_rows_total", []string{"job", odd}, 1234},
		{"tally_scheduler_start_time_seconds", nil, float64(now.Unix())},
		{"tally_budget_actual_ratio", []string{"budget", "platform"}, 0.5},
		{"tally_budget_forecast_ratio", []string{"budget", "platform"}, 1.05},
		{"tally_anomalies_total", nil, 3},
	}
	for _, w := range want {
		got, ok := promValue(samples, w.name, w.labels...)
		if !ok || got != w.value {
			t.Errorf("%s%q = %v (present %v), want %v", w.name, w.labels, got, ok, w.value)
		}
	}
	// A job that never ran has no last-run times rather than a zero.
	for _, name := range []string{"tally_job_last_run_timestamp_seconds", "tally_job_last_success_timestamp_seconds", "tally_job_last_run_duration_seconds"} {
		if _, ok := promValue(samples, name, "job", "weekly"); ok {
			t.Errorf("%s for a job that never ran", name)
		}
	}
}

// The file is replaced whole, readable by the collector's user, with no
// temp file left beside it.
func TestWriteMetricsFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "tally.prom")
	for _, text := range []string{"a 1\n", "b 2\n"} {
		if err := writeMetricsFile(path, []byte(text)); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(path)
		if err != nil || string(got) != text {
			t.Fatalf("file %q, %v; want %q", got, err, text)
		}
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o644 {
		t.Fatalf("mode %v, %v", fi.Mode(), err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Fatalf("files left: %v", entries)
	}
	if err := writeMetricsFile(filepath.Join(dir, "missing", "tally.prom"), []byte("x 1\n")); err == nil || !strings.Contains(err.Error(), "write metrics") {
		t.Fatalf("metrics into a missing folder: %v", err)
	}
}

// The textfile output passes the linter promtool check metrics runs
// (promlint), and /metrics serves the same series with tally_build_info
// and the Go runtime and process metrics beside them.
func TestMetricsLintAndEndpoint(t *testing.T) {
	now := time.Date(2026, 3, 5, 3, 0, 0, 0, time.UTC)
	jobs := []configs.Job{{Name: "nightly", Cron: "CRON_TZ=UTC 30 2 * * *", Run: []string{"fetch"}}}
	m := newMonitor(jobs, []cron.Schedule{mustCron(t, jobs[0].Cron)}, time.Minute, func() time.Time { return now })
	fin := now.Add(-time.Minute)
	m.runFinished("nightly", store.RunInfo{ID: uuid.New(), Job: "nightly", Command: "schedule", Started: now.Add(-time.Hour), Finished: &fin, Status: store.RunOK, Rows: 7})

	exp := time.Date(2027, 5, 1, 12, 0, 0, 0, time.UTC)
	m.tokenExpires = &exp
	if h := m.health(); h.TokenExpires == nil || !h.TokenExpires.Equal(exp) {
		t.Errorf("/healthz token_expires %v, want %v", h.TokenExpires, exp)
	}
	m.Request("usage", 200)
	m.Request("usage", 200)
	m.Request("usage", 0)
	m.Retry("rate_card")
	m.alertsChecked(alerts.Check{Anomalies: 1, Budgets: []alerts.BudgetStatus{{Budget: configs.Budget{Name: "b", Amount: tally.MustDecimal("10")},
		Actual: tally.MustDecimal("1"), Forecast: tally.MustDecimal("2")}}})

	text := m.metrics()
	problems, err := promlint.New(bytes.NewReader(text)).Lint()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("promlint: %s: %s", p.Metric, p.Text)
	}
	if strings.Contains(string(text), "go_goroutines") {
		t.Error("the textfile carries Go runtime metrics; node_exporter has its own")
	}

	srv := httptest.NewServer(m.metricsHandler("v1.2.3", "abc123"))
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	// The official parser reads what Prometheus scrapes (summaries too).
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	has := func(name string, labels ...string) (float64, bool) {
		f, ok := families[name]
		if !ok {
			return 0, false
		}
	next:
		for _, m := range f.GetMetric() {
			got := map[string]string{}
			for _, l := range m.GetLabel() {
				got[l.GetName()] = l.GetValue()
			}
			for i := 0; i+1 < len(labels); i += 2 {
				if got[labels[i]] != labels[i+1] {
					continue next
				}
			}
			switch {
			case m.GetGauge() != nil:
				return m.GetGauge().GetValue(), true
			case m.GetCounter() != nil:
				return m.GetCounter().GetValue(), true
			}
			return 0, true
		}
		return 0, false
	}
	for _, want := range []struct {
		name   string
		labels []string
	}{
		{"tally_build_info", []string{"version", "v1.2.3", "commit", "abc123"}},
		{"tally_job_healthy", []string{"job", "nightly"}},
		{"tally_fetch_rows_total", []string{"job", "nightly"}},
		{"go_goroutines", nil},
		{"process_start_time_seconds", nil},
	} {
		if _, ok := has(want.name, want.labels...); !ok {
			t.Errorf("/metrics has no %s%q", want.name, want.labels)
		}
	}
	if v, _ := has("tally_fetch_rows_total", "job", "nightly"); v != 7 {
		t.Errorf("tally_fetch_rows_total = %v, want 7", v)
	}
	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"tally_api_requests_total", []string{"resource", "usage", "status", "200"}, 2},
		{"tally_api_requests_total", []string{"resource", "usage", "status", "error"}, 1},
		{"tally_api_retries_total", []string{"resource", "rate_card"}, 1},
		{"tally_token_expiry_timestamp_seconds", nil, float64(exp.Unix())},
	} {
		if v, ok := has(c.name, c.labels...); !ok || v != c.want {
			t.Errorf("%s%q = %v (present %v), want %v", c.name, c.labels, v, ok, c.want)
		}
	}
}
