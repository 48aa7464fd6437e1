package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tally-dev/tally"
	"github.com/tally-dev/tally/fetch/sim"
	"github.com/tally-dev/tally/job"
	"github.com/tally-dev/tally/schedules"
	"github.com/tally-dev/tally/store"
)

const schedToken = "tok-schedule-3b7e0c9d41aa"

// schedProc is a running tally process.
type schedProc struct {
	cmd            *exec.Cmd
	stdout, stderr bytes.Buffer
	done           chan struct{}
	code           int
}

func schedStartProc(t *testing.T, bin string, args ...string) *schedProc {
	t.Helper()
	p := &schedProc{cmd: exec.Command(bin, append(args, "--log-format", "json")...), done: make(chan struct{})}
	p.cmd.Env = append(os.Environ(), "TALLY_API_TOKEN="+schedToken)
	p.cmd.Stdout, p.cmd.Stderr = &p.stdout, &p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		err := p.cmd.Wait()
		p.code = 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			p.code = ee.ExitCode()
		} else if err != nil {
			p.code = -1
		}
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			p.cmd.Process.Kill()
			<-p.done
		}
	})
	return p
}

// wait waits up to d for the process to exit and returns its exit code.
func (p *schedProc) wait(t *testing.T, d time.Duration) int {
	t.Helper()
	select {
	case <-p.done:
		return p.code
	case <-time.After(d):
		p.cmd.Process.Kill()
		<-p.done
		t.Fatalf("%v still running after %s; stderr:\n%s", p.cmd.Args, d, p.stderr.String())
		return -1
	}
}

// schedSim serves the simulated interface over loopback. While stall is
// set, each usage answer sends half its body and then waits: the first
// until release is closed, the others too, or, with hang, until the client
// gives up.
type schedSim struct {
	sim     *sim.Server
	srv     *httptest.Server
	mu      sync.Mutex
	stall   bool
	hang    bool
	n       int
	started chan stalled // each stalled answer, once half is sent
	release chan struct{}
}

func newSchedSim(t *testing.T, start time.Time) *schedSim {
	s := &schedSim{
		sim:     sim.New(sim.Options{Token: schedToken, Seed: 11, Start: start}),
		started: make(chan stalled, 16),
		release: make(chan struct{}),
	}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *schedSim) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	stall := s.stall && r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/reports/usage")
	k, hang := s.n, s.hang
	if stall {
		s.n++
	}
	s.mu.Unlock()
	if !stall {
		s.sim.ServeHTTP(w, r)
		return
	}
	var q struct {
		StartDate string `json:"startDate"`
	}
	body, _ := readAllAndRestore(r)
	json.Unmarshal(body, &q)
	rec := httptest.NewRecorder()
	s.sim.ServeHTTP(rec, r)
	for k, v := range rec.Header() {
		if k != "Content-Length" {
			w.Header()[k] = v
		}
	}
	w.WriteHeader(rec.Code)
	answer := rec.Body.Bytes()
	w.Write(answer[:len(answer)/2])
	w.(http.Flusher).Flush()
	s.started <- stalled{k, q.StartDate}
	if k == 0 || !hang {
		select {
		case <-s.release:
		case <-r.Context().Done():
			return
		}
	} else {
		<-r.Context().Done()
		return
	}
	w.Write(answer[len(answer)/2:])
}

// stalled is a usage answer held half sent: the k-th (from 0) of those
// stalled, for the window starting at start.
type stalled struct {
	k     int
	start string
}

// next returns the next answer stalled.
func (s *schedSim) next(t *testing.T) stalled {
	t.Helper()
	select {
	case st := <-s.started:
		return st
	case <-time.After(30 * time.Second):
		t.Fatal("no usage request stalled within 30s")
		return stalled{}
	}
}

func (s *schedSim) setStall(stall, hang bool) {
	s.mu.Lock()
	s.stall, s.hang = stall, hang
	s.mu.Unlock()
}

func regexpMatch(pattern, s string) bool { return regexp.MustCompile(pattern).MatchString(s) }

func readAllAndRestore(r *http.Request) ([]byte, error) {
	var b bytes.Buffer
	_, err := b.ReadFrom(r.Body)
	r.Body.Close()
	r.Body = nopCloser{bytes.NewReader(b.Bytes())}
	return b.Bytes(), err
}

type nopCloser struct{ *bytes.Reader }

func (nopCloser) Close() error { return nil }

// schedConfig writes a config for the sim into dir, with extra YAML
// appended (the schedule section).
func schedConfig(t *testing.T, dir, name, baseURL string, start time.Time, extra string) string {
	t.Helper()
	yml := fmt.Sprintf(`api:
  base_url: %s
  concurrency: 2
  timeout: 60s
usage:
  granularity: day
  start: %s
  window: 1d
  lookback: 30d
store:
  path: tally.duckdb
reports:
  months: []
%s`, baseURL, start.Format(tally.DateLayout), extra)
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(yml), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// schedWindow is one ledger window and what the usage table holds in it.
type schedWindow struct {
	start, run      string
	rows, usageRows int64
	usageRuns       int64 // distinct run ids of the usage rows in the window
	usageRun        string
}

// schedLedger reads every window of the ledger with the usage rows inside
// it, and the usage rows outside every window.
func schedLedger(t *testing.T, db string) (map[string]schedWindow, int64) {
	t.Helper()
	st, err := store.Open(context.Background(), db, store.ReadOnly())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	rows, err := st.DB().Query(`SELECT strftime(w.start, '%Y-%m-%d'), w.run_id::VARCHAR, w.rows,
			(SELECT count(*) FROM usage u WHERE u.granularity = w.granularity AND u.date >= w.start AND u.date < w."end"),
			(SELECT count(DISTINCT u.run_id) FROM usage u WHERE u.granularity = w.granularity AND u.date >= w.start AND u.date < w."end"),
			(SELECT coalesce(min(u.run_id::VARCHAR), '') FROM usage u WHERE u.granularity = w.granularity AND u.date >= w.start AND u.date < w."end")
		FROM fetch_windows w`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]schedWindow{}
	for rows.Next() {
		var w schedWindow
		if err := rows.Scan(&w.start, &w.run, &w.rows, &w.usageRows, &w.usageRuns, &w.usageRun); err != nil {
			t.Fatal(err)
		}
		out[w.start] = w
	}
	var outside int64
	if err := st.DB().QueryRow(`SELECT count(*) FROM usage u WHERE NOT EXISTS (SELECT 1 FROM fetch_windows w
		WHERE u.granularity = w.granularity AND u.date >= w.start AND u.date < w."end")`).Scan(&outside); err != nil {
		t.Fatal(err)
	}
	return out, outside
}

// schedRunsOf reads the runs table: id → "command job status".
func schedRunsOf(t *testing.T, db string) []store.RunInfo {
	t.Helper()
	st, err := store.Open(context.Background(), db, store.ReadOnly())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	rows, err := st.DB().Query(`SELECT id::VARCHAR, command, coalesce(job, ''), started, finished, status, coalesce(error, '') FROM runs ORDER BY started`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []store.RunInfo
	for rows.Next() {
		var r store.RunInfo
		var id string
		var fin sql.NullTime
		if err := rows.Scan(&id, &r.Command, &r.Job, &r.Started, &fin, &r.Status, &r.Error); err != nil {
			t.Fatal(err)
		}
		r.ID.UnmarshalText([]byte(id))
		if fin.Valid {
			r.Finished = &fin.Time
		}
		out = append(out, r)
	}
	return out
}

func TestScheduleProcesses(t *testing.T) {
	bin := tallyBinary(t)
	today := tally.Day.Truncate(time.Now().UTC())
	start := today.AddDate(0, 0, -5)

	// A bad cron spec stops tally schedule, and every other command, at
	// start with exit 2, naming the job, before anything is touched.
	t.Run("invalid cron exits 2", func(t *testing.T) {
		dir := t.TempDir()
		cfg := schedConfig(t, dir, "tally.yaml", "http://127.0.0.1:9", start,
			"schedule:\n  jobs:\n    - {name: nightly, cron: '30 2 * * *', run: [fetch]}\n    - {name: hourly, cron: '61 * * * *', run: [fetch]}\n")
		for _, cmd := range []string{"schedule", "fetch"} {
			p := schedStartProc(t, bin, cmd, "--config", cfg)
			if code := p.wait(t, 20*time.Second); code != job.ExitRefused {
				t.Fatalf("tally %s: exit %d, want 2\n%s", cmd, code, p.stderr.String())
			}
			if msg := p.stderr.String(); !strings.Contains(msg, `schedule.jobs[1].cron: job "hourly": "61 * * * *" is not a cron spec`) {
				t.Fatalf("tally %s: the message does not name the job and its spec:\n%s", cmd, msg)
			}
		}
		if m, _ := filepath.Glob(filepath.Join(dir, "tally.duckdb*")); len(m) != 0 {
			t.Fatalf("a refused config touched %v", m)
		}
	})

	// Two processes contend for the lock: one that waits past
	// schedule.lock_wait gives up naming the holder and its skip is
	// recorded; one that waits long enough runs once the holder is done.
	t.Run("lock contention", func(t *testing.T) {
		dir := t.TempDir()
		s := newSchedSim(t, start)
		jobs := "  jobs:\n    - {name: nightly, cron: 'CRON_TZ=UTC 30 2 * * *', run: [fetch]}\n"
		short := schedConfig(t, dir, "short.yaml", s.srv.URL, start, "schedule:\n  lock_wait: 500ms\n"+jobs)
		long := schedConfig(t, dir, "long.yaml", s.srv.URL, start, "schedule:\n  lock_wait: 60s\n"+jobs)
		db := filepath.Join(dir, "tally.duckdb")

		s.setStall(true, false)
		holder := schedStartProc(t, bin, "fetch", "--config", long)
		s.next(t) // the holder is fetching two windows: it has the lock
		s.next(t)

		skipper := schedStartProc(t, bin, "run", "--config", short, "--job", "nightly")
		if code := skipper.wait(t, 20*time.Second); code != job.ExitFailed {
			t.Fatalf("second process: exit %d, want 1\n%s", code, skipper.stderr.String())
		}
		want := fmt.Sprintf(`run skipped after waiting 500ms for the lock: the database is locked by pid %d (command "fetch"`, holder.cmd.Process.Pid)
		if !strings.Contains(skipper.stderr.String(), want) {
			t.Fatalf("second process does not name the holder (%q):\n%s", want, skipper.stderr.String())
		}

		// tally status shows the skip already, from the journal.
		out, err := execCLI(t, "", "status", "--config", short)
		if err != nil || !regexpMatch(`(?m)^nightly\s+CRON_TZ=UTC 30 2 \* \* \*\s+fetch\s+\S+\s+skipped\*\s+`, out) ||
			!strings.Contains(out, "* noted in "+store.JournalPath(db)) {
			t.Fatalf("status while the holder runs: %v\n%s", err, out)
		}

		waiter := schedStartProc(t, bin, "run", "--config", long, "--job", "nightly")
		time.Sleep(700 * time.Millisecond) // the waiter is waiting for the lock
		s.setStall(false, false)
		close(s.release)
		if code := holder.wait(t, 60*time.Second); code != job.ExitOK {
			t.Fatalf("holder: exit %d\n%s", code, holder.stderr.String())
		}
		if code := waiter.wait(t, 60*time.Second); code != job.ExitOK || !regexpMatch(`^run \S+: job nightly ok, \d+ rows, \d+ windows\n`, waiter.stdout.String()) {
			t.Fatalf("waiter: exit %d\n%s\n%s", code, waiter.stdout.String(), waiter.stderr.String())
		}
		runs := schedRunsOf(t, db)
		var got []string
		for _, r := range runs {
			got = append(got, r.Command+" "+r.Job+" "+r.Status)
		}
		if len(runs) != 3 || runs[1].Status != store.RunSkipped || runs[1].Job != "nightly" || runs[1].Command != "run" ||
			!strings.Contains(runs[1].Error, want[len("run skipped after waiting 500ms for the lock: "):]) ||
			runs[2].Command != "run" || runs[2].Job != "nightly" || runs[2].Status != store.RunOK || runs[2].Started.Before(*runs[0].Finished) {
			t.Fatalf("runs %q", got)
		}
		if p, err := store.PendingRuns(db); err != nil || len(p) != 0 {
			t.Fatalf("journal not folded: %v %v", p, err)
		}
	})

	// SIGTERM while tally schedule is fetching two windows: no window
	// starts after it; the window that completes within the grace is
	// loaded; the one still stalled when the grace ends rolls back; the
	// process exits 0 soon after the grace; every window is whole.
	t.Run("sigterm during fetch", func(t *testing.T) {
		dir := t.TempDir()
		s := newSchedSim(t, start)
		grace := 2 * time.Second
		cfg := schedConfig(t, dir, "tally.yaml", s.srv.URL, start,
			"schedule:\n  grace: 2s\n  jobs:\n    - {name: often, cron: '@every 1s', run: [fetch]}\n")
		db := filepath.Join(dir, "tally.duckdb")
		seed := schedStartProc(t, bin, "fetch", "--config", cfg)
		if code := seed.wait(t, 60*time.Second); code != job.ExitOK {
			t.Fatalf("first fetch: exit %d\n%s", code, seed.stderr.String())
		}
		before, outside := schedLedger(t, db)
		if len(before) < 5 || outside != 0 {
			t.Fatalf("first fetch left %d windows, %d rows outside them", len(before), outside)
		}

		s.setStall(true, true)
		p := schedStartProc(t, bin, "schedule", "--config", cfg)
		a, b := s.next(t), s.next(t)
		if a.k != 0 {
			a, b = b, a
		}
		finishing, hanging := a.start, b.start // the first stalled is released, the other hangs
		if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		signalled := time.Now()
		time.Sleep(300 * time.Millisecond)
		close(s.release)
		code := p.wait(t, grace+20*time.Second)
		took := time.Since(signalled)
		if code != job.ExitOK || took < grace || took > grace+3*time.Second {
			t.Fatalf("exit %d %s after SIGTERM, want 0 soon after the %s grace\n%s", code, took, grace, p.stderr.String())
		}

		after, outside := schedLedger(t, db)
		runs := schedRunsOf(t, db)
		if len(runs) != 2 || runs[1].Job != "often" || runs[1].Status != store.RunFailed || !strings.Contains(runs[1].Error, "cancelled") {
			t.Fatalf("runs %+v", runs)
		}
		seedRun, stopped := runs[0].ID.String(), runs[1].ID.String()
		if len(after) != len(before) || outside != 0 {
			t.Fatalf("%d windows after, %d before; %d rows outside", len(after), len(before), outside)
		}
		for start, w := range after {
			if w.usageRows != w.rows || (w.rows > 0 && (w.usageRuns != 1 || w.usageRun != w.run)) {
				t.Errorf("window %s is not whole: ledger %d rows of run %s, usage %d rows of %d runs", start, w.rows, w.run, w.usageRows, w.usageRuns)
			}
			want := seedRun
			if start == finishing {
				want = stopped
			}
			if w.run != want {
				t.Errorf("window %s is from run %s, want %s (finishing %s, hanging %s)", start, w.run, want, finishing, hanging)
			}
		}
		if !strings.Contains(p.stderr.String(), "stopping: no job starts from now") {
			t.Errorf("no stop logged:\n%s", p.stderr.String())
		}
	})

	t.Run("second sigterm stops at once", func(t *testing.T) { secondSignalStopsAtOnce(t, bin, start) })
}

// A second SIGTERM ends tally schedule at once, without waiting out the
// grace: the stalled window rolls back, every window stays whole, and the
// next run records the interrupted one as failed.
func secondSignalStopsAtOnce(t *testing.T, bin string, start time.Time) {
	dir := t.TempDir()
	s := newSchedSim(t, start)
	cfg := schedConfig(t, dir, "tally.yaml", s.srv.URL, start,
		"schedule:\n  grace: 10m\n  jobs:\n    - {name: often, cron: '@every 1s', run: [fetch]}\n")
	db := filepath.Join(dir, "tally.duckdb")
	seed := schedStartProc(t, bin, "fetch", "--config", cfg)
	if code := seed.wait(t, 60*time.Second); code != job.ExitOK {
		t.Fatalf("first fetch: exit %d\n%s", code, seed.stderr.String())
	}
	before, _ := schedLedger(t, db)

	s.setStall(true, true)
	p := schedStartProc(t, bin, "schedule", "--config", cfg)
	s.next(t)
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(p.stderr.String(), "a second signal stops at once") {
		if time.Now().After(deadline) {
			t.Fatalf("the first SIGTERM was not taken:\n%s", p.stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	signalled := time.Now()
	code := p.wait(t, 60*time.Second)
	if took := time.Since(signalled); code == job.ExitOK || took > 10*time.Second {
		t.Fatalf("exit %d %s after the second SIGTERM, want an immediate stop, not the 10m grace\n%s", code, took, p.stderr.String())
	}

	after, outside := schedLedger(t, db)
	if len(after) != len(before) || outside != 0 {
		t.Fatalf("%d windows after, %d before; %d rows outside", len(after), len(before), outside)
	}
	for start, w := range after {
		if w.usageRows != w.rows || w != before[start] {
			t.Errorf("window %s changed or is not whole: %+v, was %+v", start, w, before[start])
		}
	}
	s.setStall(false, false)
	again := schedStartProc(t, bin, "fetch", "--config", cfg)
	if code := again.wait(t, 60*time.Second); code != job.ExitOK {
		t.Fatalf("fetch after the stop: exit %d\n%s", code, again.stderr.String())
	}
	runs := schedRunsOf(t, db)
	if len(runs) != 3 || runs[1].Job != "often" || runs[1].Status != store.RunFailed || runs[2].Status != store.RunOK {
		t.Fatalf("runs %+v", runs)
	}
}

// tally status lists each configured job with its latest run from the
// published copy and its next time; tally run --job refuses a job the
// config does not have.
func TestStatusJobsAndRunJobFlag(t *testing.T) {
	cfg, _ := queryFixture(t, true) // one ok run of job nightly; the default schedule
	out, err := execCLI(t, "", "status", "--config", cfg)
	if err != nil {
		t.Fatal(err)
	}
	next := time.Now().UTC().Truncate(24 * time.Hour).Add(2*time.Hour + 30*time.Minute)
	if !next.After(time.Now()) {
		next = next.AddDate(0, 0, 1)
	}
	if !regexpMatch(`(?m)^JOB\s+CRON\s+STEPS\s+LAST RUN\s+STATUS\s+FINISHED\s+LAST SUCCESS\s+NEXT\s+ERROR$`, out) ||
		!regexpMatch(`(?m)^nightly\s+CRON_TZ=UTC 30 2 \* \* \*\s+fetch,report\s+[0-9a-f-]{36}\s+ok\s+\S+Z\s+\S+Z\s+`+next.Format(time.RFC3339)+`\s+-$`, out) {
		t.Fatalf("status:\n%s", out)
	}
	out, err = execCLI(t, "", "status", "--config", cfg, "--format", "json")
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Jobs []schedules.JobStatus
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil || len(rep.Jobs) != 1 || rep.Jobs[0].LastRun == nil ||
		rep.Jobs[0].LastRun.Status != "ok" || rep.Jobs[0].LastSuccess == nil || rep.Jobs[0].Next == nil || !rep.Jobs[0].Next.Equal(next) {
		t.Fatalf("json jobs: %v\n%s", err, out)
	}

	t.Setenv("TALLY_API_TOKEN", schedToken)
	if _, err := execCLI(t, "", "run", "--config", cfg, "--job", "weekly"); !isUsageError(err) || !strings.Contains(err.Error(), `--job "weekly" is not a job of schedule.jobs; the jobs are: nightly`) {
		t.Fatalf("run --job weekly: %v", err)
	}
}
