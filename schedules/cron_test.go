package schedules

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/rs/zerolog"

	"github.com/tally-dev/tally/configs"
	_ "github.com/tally-dev/tally/ingest" // registers the step fetch, which these jobs name
	"github.com/tally-dev/tally/internal/secret"
	"github.com/tally-dev/tally/job"
	"github.com/tally-dev/tally/store"
)

// schedRunner is a Runner on a fresh database in a temp folder, whose
// config has jobs (steps set with schedStep) and grace.
func schedRunner(t *testing.T, grace time.Duration, jobs ...configs.Job) (*Runner, *schedLogs) {
	t.Helper()
	dir := t.TempDir()
	cfg, err := configs.Parse([]byte("usage:\n  start: 2026-01-01\nstore:\n  path: tally.duckdb\nschedule:\n  lock_wait: 200ms\n"), dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Schedule.Jobs = jobs
	cfg.Schedule.Grace = grace
	logs := &schedLogs{}
	log := zerolog.New(zerolog.SyncWriter(logs)).Level(zerolog.DebugLevel).With().Timestamp().Logger()
	return &Runner{Config: cfg, Token: secret.New("tok-sched-test"), Log: log, Version: "test"}, logs
}

// schedLogs collects JSON log lines.
type schedLogs struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *schedLogs) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *schedLogs) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// count returns how many log lines have message msg.
func (l *schedLogs) count(msg string) int {
	n := 0
	for _, line := range strings.Split(l.String(), "\n") {
		var m struct{ Message string }
		if json.Unmarshal([]byte(line), &m) == nil && m.Message == msg {
			n++
		}
	}
	return n
}

// schedStep makes fn available as step name for the test's duration.
func schedStep(t *testing.T, name string, fn job.Step) {
	t.Helper()
	job.Register(name, fn)
	t.Cleanup(func() { job.Unregister(name) })
}

// schedStart runs a Scheduler until the returned stop is called; stop
// returns Run's error and how long Run took to return after the stop.
func schedStart(t *testing.T, r *Runner, opts ScheduleOptions) (*Scheduler, func() (time.Duration, error)) {
	t.Helper()
	s, err := NewScheduler(r, opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	select {
	case <-s.Listening():
	case err := <-done:
		t.Fatalf("scheduler ended at start: %v", err)
	}
	var once sync.Once
	var res error
	var took time.Duration
	stop := func() (time.Duration, error) {
		once.Do(func() {
			began := time.Now()
			cancel()
			select {
			case res = <-done:
			case <-time.After(30 * time.Second):
				res = fmt.Errorf("scheduler did not return 30s after the stop")
			}
			took = time.Since(began)
		})
		return took, res
	}
	t.Cleanup(func() { stop() })
	return s, stop
}

// schedRuns reads the runs of the database (no run may hold it).
func schedRuns(t *testing.T, r *Runner) []store.RunInfo {
	t.Helper()
	db, err := sql.Open("duckdb", r.Config.Store.Path+"?access_mode=READ_ONLY")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(`SELECT id::VARCHAR, coalesce(job, ''), command, started, finished, status, coalesce(error, ''), rows, windows FROM runs ORDER BY started`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []store.RunInfo
	for rows.Next() {
		var r store.RunInfo
		var id string
		var fin sql.NullTime
		if err := rows.Scan(&id, &r.Job, &r.Command, &r.Started, &fin, &r.Status, &r.Error, &r.Rows, &r.Windows); err != nil {
			t.Fatal(err)
		}
		r.ID = uuid.MustParse(id)
		if fin.Valid {
			r.Finished = &fin.Time
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// waitFor polls cond every 20ms until it holds or d has passed.
func schedWait(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited %s for %s", d, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A job due every second runs again and again, each run recorded under
// its name, and two runs never overlap, even when one takes longer than
// the gap: the time that comes meanwhile is skipped, logged and counted.
func TestScheduleEverySecondNeverConcurrent(t *testing.T) {
	var inFlight, most, done atomic.Int32
	var slow atomic.Bool
	schedStep(t, "probe-every", func(ctx context.Context, env *job.Env, runID uuid.UUID) (job.Result, error) {
		n := inFlight.Add(1)
		defer inFlight.Add(-1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		d := 100 * time.Millisecond
		if slow.Load() {
			d = 1500 * time.Millisecond // spans at least one time of an every-second job
		}
		time.Sleep(d)
		done.Add(1)
		return job.Result{Rows: 1}, nil
	})
	r, logs := schedRunner(t, time.Second, configs.Job{Name: "every", Cron: "@every 1s", Run: []string{"probe-every"}})
	s, stop := schedStart(t, r, ScheduleOptions{})

	// The waits bound a hang, not a speed: a run records itself in DuckDB,
	// which on a loaded machine takes longer than a tick.
	schedWait(t, time.Minute, "three quick runs", func() bool { return done.Load() >= 3 })
	slow.Store(true)
	schedWait(t, time.Minute, "a skipped time", func() bool {
		h := s.Health()
		return h.Jobs[0].SkippedTicks >= 1
	})
	if _, err := stop(); err != nil {
		t.Fatal(err)
	}

	if m := most.Load(); m != 1 {
		t.Fatalf("%d runs of the job at once", m)
	}
	h := s.Health()
	j := h.Jobs[0]
	if j.Runs[store.RunOK] < 3 || j.Rows != j.Runs[store.RunOK] {
		t.Errorf("health counts %v runs, %d rows", j.Runs, j.Rows)
	}
	if n := logs.count("job skipped: it was due while its previous run was still going"); int64(n) != j.SkippedTicks {
		t.Errorf("%d skip log lines, %d skipped times counted", n, j.SkippedTicks)
	}
	runs := schedRuns(t, r)
	if int64(len(runs)) != j.Runs[store.RunOK] {
		t.Errorf("%d runs recorded, health says %d", len(runs), j.Runs[store.RunOK])
	}
	for i, run := range runs {
		if run.Job != "every" || run.Command != "schedule" || run.Status != store.RunOK || run.Rows != 1 || run.Finished == nil {
			t.Errorf("run %d: %+v", i, run)
		}
		if i > 0 && runs[i-1].Finished.After(run.Started) {
			t.Errorf("run %d started at %s, before run %d finished at %s", i, run.Started, i-1, runs[i-1].Finished)
		}
	}
}

// A panic in a step is recovered: the run is recorded as failed with the
// panic's message, the lock is given back, and the next time runs again.
func TestSchedulePanicRecordedAsFailedRun(t *testing.T) {
	var calls atomic.Int32
	schedStep(t, "probe-panic", func(context.Context, *job.Env, uuid.UUID) (job.Result, error) {
		calls.Add(1)
		panic("boom")
	})
	r, logs := schedRunner(t, time.Second, configs.Job{Name: "fragile", Cron: "@every 1s", Run: []string{"probe-panic"}})
	s, stop := schedStart(t, r, ScheduleOptions{})
	schedWait(t, 6*time.Second, "two failed runs", func() bool { return s.Health().Jobs[0].Runs[store.RunFailed] >= 2 })
	if _, err := stop(); err != nil {
		t.Fatal(err)
	}
	runs := schedRuns(t, r)
	if len(runs) < 2 {
		t.Fatalf("runs %+v", runs)
	}
	for _, run := range runs {
		if run.Status != store.RunFailed || run.Error != "panic: boom" || run.Job != "fragile" || run.Finished == nil {
			t.Errorf("run %+v", run)
		}
	}
	if !strings.Contains(logs.String(), `"panic":"boom"`) || !strings.Contains(logs.String(), "goroutine") {
		t.Errorf("the panic and its stack are not logged:\n%s", logs)
	}
	if h := s.Health(); h.Healthy || !strings.Contains(h.Jobs[0].Reason, "panic: boom") {
		t.Errorf("health after a panic: %+v", h)
	}
}

// /healthz is 200 while the job's latest run succeeded, flips to 503 with
// the failure in the body after a failed run, and back after a good one.
func TestHealthzFlipsAfterFailedRun(t *testing.T) {
	var fail atomic.Bool
	var runs atomic.Int32
	schedStep(t, "probe-flaky", func(context.Context, *job.Env, uuid.UUID) (job.Result, error) {
		defer runs.Add(1)
		if fail.Load() {
			return job.Result{}, fmt.Errorf("interface answered 503 to everything")
		}
		return job.Result{Rows: 5}, nil
	})
	r, _ := schedRunner(t, time.Second, configs.Job{Name: "flaky", Cron: "@every 1s", Run: []string{"probe-flaky"}})
	metrics := filepath.Join(t.TempDir(), "tally.prom")
	s, stop := schedStart(t, r, ScheduleOptions{HealthAddr: "127.0.0.1:0", MetricsFile: metrics})
	url := "http://" + s.HealthAddr().String()

	get := func(path string) (int, string) {
		t.Helper()
		resp, err := http.Get(url + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	health := func() (int, Health) {
		t.Helper()
		code, body := get("/healthz")
		var h Health
		if err := json.Unmarshal([]byte(body), &h); err != nil {
			t.Fatalf("healthz body %q: %v", body, err)
		}
		return code, h
	}

	// Before the first run the job is not overdue yet.
	if code, h := health(); code != http.StatusOK || !h.Healthy || h.Jobs[0].LastRun != nil || !strings.Contains(h.Jobs[0].Reason, "no run yet") {
		t.Fatalf("before any run: %d %+v", code, h)
	}
	schedWait(t, 5*time.Second, "a good run", func() bool { return s.Health().Jobs[0].Runs[store.RunOK] >= 1 })
	code, h := health()
	if code != http.StatusOK || !h.Healthy || h.Status != "ok" || h.Jobs[0].LastRun == nil || h.Jobs[0].LastRun.Status != store.RunOK ||
		h.Jobs[0].LastSuccess == nil || h.Jobs[0].Cron != "@every 1s" || !h.Jobs[0].Deadline.After(h.CheckedAt) {
		t.Fatalf("after a good run: %d %+v", code, h)
	}

	fail.Store(true)
	schedWait(t, 5*time.Second, "a failed run", func() bool { return s.Health().Jobs[0].Runs[store.RunFailed] >= 1 })
	code, h = health()
	if code != http.StatusServiceUnavailable || h.Healthy || h.Status != "failing" || h.Jobs[0].Healthy ||
		!strings.Contains(h.Jobs[0].Reason, "was failed: step probe-flaky: interface answered 503 to everything") ||
		h.Jobs[0].LastSuccess == nil || h.Jobs[0].LastRun.Status != store.RunFailed {
		t.Fatalf("after a failed run: %d %+v", code, h)
	}
	if _, text := get("/metrics"); !strings.Contains(text, `tally_job_healthy{job="flaky"} 0`) ||
		!strings.Contains(text, `tally_job_last_run_status{job="flaky",status="failed"} 1`) {
		t.Errorf("/metrics after a failed run:\n%s", text)
	}
	schedWait(t, 3*time.Second, "the metrics file to say failing", func() bool {
		return strings.Contains(schedRead(t, metrics), `tally_job_healthy{job="flaky"} 0`)
	})

	fail.Store(false)
	schedWait(t, 5*time.Second, "a good run again", func() bool {
		h := s.Health()
		return h.Jobs[0].LastRun != nil && h.Jobs[0].LastRun.Status == store.RunOK
	})
	if code, h := health(); code != http.StatusOK || !h.Healthy {
		t.Fatalf("after recovering: %d %+v", code, h)
	}
	if _, err := stop(); err != nil {
		t.Fatal(err)
	}
}

// On stop no job starts; a running step that finishes within the grace
// keeps its result, one that does not is cancelled when the grace ends,
// and Run returns soon after, without error.
func TestScheduleStopWithinGrace(t *testing.T) {
	t.Run("finishes", func(t *testing.T) {
		started := make(chan struct{}, 10)
		var runs atomic.Int32
		schedStep(t, "probe-finish", func(ctx context.Context, env *job.Env, runID uuid.UUID) (job.Result, error) {
			runs.Add(1)
			started <- struct{}{}
			time.Sleep(400 * time.Millisecond) // shorter than the grace
			return job.Result{Rows: 7}, ctx.Err()
		})
		r, _ := schedRunner(t, 3*time.Second, configs.Job{Name: "finisher", Cron: "@every 1s", Run: []string{"probe-finish"}})
		_, stop := schedStart(t, r, ScheduleOptions{})
		<-started
		took, err := stop()
		if err != nil || took > 2*time.Second {
			t.Fatalf("stop: %v after %s", err, took)
		}
		time.Sleep(1200 * time.Millisecond) // a time that would have come
		got := schedRuns(t, r)
		if len(got) != 1 || runs.Load() != 1 || got[0].Status != store.RunOK || got[0].Rows != 7 {
			t.Fatalf("runs after a stop mid-run: %+v (%d started)", got, runs.Load())
		}
	})
	t.Run("cancelled when the grace ends", func(t *testing.T) {
		started := make(chan struct{}, 10)
		schedStep(t, "probe-hang", func(ctx context.Context, env *job.Env, runID uuid.UUID) (job.Result, error) {
			started <- struct{}{}
			<-ctx.Done()
			return job.Result{}, context.Cause(ctx)
		})
		grace := 500 * time.Millisecond
		r, _ := schedRunner(t, grace, configs.Job{Name: "hanger", Cron: "@every 1s", Run: []string{"probe-hang"}})
		_, stop := schedStart(t, r, ScheduleOptions{})
		<-started
		took, err := stop()
		if err != nil || took < grace || took > grace+2*time.Second {
			t.Fatalf("stop: %v after %s, want nil after about %s", err, took, grace)
		}
		got := schedRuns(t, r)
		if len(got) != 1 || got[0].Status != store.RunFailed || !strings.Contains(got[0].Error, "shutdown grace period of 500ms ended") {
			t.Fatalf("runs: %+v", got)
		}
	})
}

// NewScheduler refuses what cannot be scheduled, naming the job.
func TestNewSchedulerRefuses(t *testing.T) {
	r, _ := schedRunner(t, time.Second, configs.Job{Name: "ok", Cron: "@daily", Run: []string{"fetch"}},
		configs.Job{Name: "typo", Cron: "0 2 * *", Run: []string{"fetch"}})
	_, err := NewScheduler(r, ScheduleOptions{})
	if err == nil || !strings.Contains(err.Error(), `schedule.jobs[1].cron: job "typo": "0 2 * *" is not a cron spec`) {
		t.Fatalf("bad spec: %v", err)
	}
	r.Config.Schedule.Jobs = nil
	if _, err := NewScheduler(r, ScheduleOptions{}); err == nil || !strings.Contains(err.Error(), "schedule.jobs is empty") {
		t.Fatalf("no jobs: %v", err)
	}
}

func schedRead(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	return string(b)
}

func schedNop() zerolog.Logger { return zerolog.Nop() }
