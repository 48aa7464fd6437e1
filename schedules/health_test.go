package schedules

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/robfig/cron/v3"

	"github.com/tally-dev/tally/configs"
	_ "github.com/tally-dev/tally/ingest" // registers the step fetch, which these jobs name
	"github.com/tally-dev/tally/job"
	"github.com/tally-dev/tally/store"
)

func mustCron(t *testing.T, spec string) cron.Schedule {
	t.Helper()
	s, err := configs.ParseCron(spec)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// A job is overdue once its schedule has come round twice since its
// latest run started, plus the grace, however irregular the schedule.
func TestHealthDeadline(t *testing.T) {
	grace := 30 * time.Second
	tests := []struct {
		spec string
		ref  string // the latest run's start
		want string
	}{
		{"CRON_TZ=UTC 30 2 * * *", "2026-03-02T02:30:00Z", "2026-03-04T02:30:30Z"},
		{"@daily", "2026-03-02T00:00:01Z", "2026-03-04T00:00:30Z"},
		{"@every 5m", "2026-03-02T10:00:00Z", "2026-03-02T10:10:30Z"},
		// Friday's run of a weekday job is fine all weekend.
		{"0 9 * * MON-FRI", "2026-03-06T09:00:00Z", "2026-03-10T09:00:30Z"},
		// 02:30 in Berlin is 01:30 UTC in winter, 00:30 UTC in summer.
		{"CRON_TZ=Europe/Berlin 30 2 * * *", "2026-01-05T01:30:00Z", "2026-01-07T01:30:30Z"},
		{"CRON_TZ=Europe/Berlin 30 2 * * *", "2026-04-06T00:30:00Z", "2026-04-08T00:30:30Z"},
		// On 29 March 2026 Berlin's clocks jump from 02:00 to 03:00: that
		// day has no 02:30, so no run (README says to keep jobs out of
		// that hour or in UTC).
		{"CRON_TZ=Europe/Berlin 30 2 * * *", "2026-03-28T01:30:00Z", "2026-03-31T00:30:30Z"},
	}
	for _, tc := range tests {
		ref, _ := time.Parse(time.RFC3339, tc.ref)
		if got := deadline(mustCron(t, tc.spec), ref, grace).UTC().Format(time.RFC3339); got != tc.want {
			t.Errorf("%s after %s: deadline %s, want %s", tc.spec, tc.ref, got, tc.want)
		}
	}
}

// The states a job's health goes through, on a clock the test moves.
func TestHealthStates(t *testing.T) {
	var now atomic.Pointer[time.Time]
	set := func(s string) time.Time {
		tm, _ := time.Parse(time.RFC3339, s)
		now.Store(&tm)
		return tm
	}
	started := set("2026-03-02T12:00:00Z")
	job := configs.Job{Name: "nightly", Cron: "CRON_TZ=UTC 30 2 * * *", Run: []string{"fetch"}}
	m := newMonitor([]configs.Job{job}, []cron.Schedule{mustCron(t, job.Cron)}, time.Minute, func() time.Time { return *now.Load() })
	check := func(healthy bool, reason string) JobHealth {
		t.Helper()
		h := m.health()
		j := h.Jobs[0]
		if h.Healthy != healthy || j.Healthy != healthy || !strings.Contains(j.Reason, reason) {
			t.Fatalf("at %s: healthy %v (%s), want %v with %q", now.Load().Format(time.RFC3339), h.Healthy, j.Reason, healthy, reason)
		}
		if !h.Started.Equal(started) {
			t.Fatalf("started %s", h.Started)
		}
		return j
	}

	j := check(true, "no run yet; the first is due at 2026-03-03T02:30:00Z")
	if j.Deadline.Format(time.RFC3339) != "2026-03-04T02:31:00Z" || j.ExpectedWithin != "38h31m0s" {
		t.Fatalf("deadline %s within %s", j.Deadline, j.ExpectedWithin)
	}
	// The first run, while it runs, is shown running, not "no run yet".
	{
		first := newMonitor([]configs.Job{job}, []cron.Schedule{mustCron(t, job.Cron)}, time.Minute, func() time.Time { return *now.Load() })
		set("2026-03-03T02:30:00Z")
		first.runStarted("nightly")
		if fj := first.health().Jobs[0]; !fj.Healthy || fj.Reason != "the first run is running since 2026-03-03T02:30:00Z" || fj.RunningSince == nil {
			t.Fatalf("first run in progress: healthy %v, %q", fj.Healthy, fj.Reason)
		}
	}
	set("2026-03-04T02:31:01Z")
	check(false, "no run since the scheduler started at 2026-03-02T12:00:00Z; one was expected by 2026-03-04T02:31:00Z")

	run := func(start, end, status, msg string) {
		s, _ := time.Parse(time.RFC3339, start)
		set(start)
		m.runStarted("nightly")
		if h := m.health(); h.Jobs[0].RunningSince == nil {
			t.Fatal("running not shown")
		}
		fin := set(end)
		m.runFinished("nightly", store.RunInfo{ID: uuid.New(), Job: "nightly", Command: "schedule", Started: s, Finished: &fin, Status: status, Error: msg, Rows: 10})
	}
	run("2026-03-05T02:30:00Z", "2026-03-05T02:40:00Z", store.RunOK, "")
	j = check(true, "the latest run succeeded")
	if j.LastSuccess == nil || j.LastSuccess.Format(time.RFC3339) != "2026-03-05T02:40:00Z" || j.RunningSince != nil || j.Rows != 10 || j.Runs[store.RunOK] != 1 {
		t.Fatalf("after a good run: %+v", j)
	}
	set("2026-03-07T02:30:59Z")
	check(true, "the latest run succeeded")
	set("2026-03-07T02:31:01Z")
	check(false, "the latest run started at 2026-03-05T02:30:00Z and none has succeeded since")

	run("2026-03-08T02:30:00Z", "2026-03-08T02:31:00Z", store.RunPartial, "1 window(s) failed\nafter all retries")
	j = check(false, "was partial: 1 window(s) failed after all retries")
	if j.LastSuccess.Format(time.RFC3339) != "2026-03-05T02:40:00Z" {
		t.Fatalf("last success moved: %s", j.LastSuccess)
	}
	run("2026-03-09T02:30:00Z", "2026-03-09T02:30:01Z", store.RunSkipped, "the database is locked by pid 42")
	check(false, "was skipped: the database is locked by pid 42")
	m.tickSkipped("nightly")
	run("2026-03-10T02:30:00Z", "2026-03-10T02:35:00Z", store.RunOK, "")
	j = check(true, "the latest run succeeded")
	if j.SkippedTicks != 1 || j.Runs[store.RunOK] != 2 || j.Runs[store.RunPartial] != 1 || j.Runs[store.RunSkipped] != 1 || j.Runs[store.RunFailed] != 0 {
		t.Fatalf("counters %+v", j)
	}

	// The HTTP answer carries the same, 200 or 503.
	for _, tc := range []struct {
		at   string
		code int
	}{{"2026-03-10T03:00:00Z", http.StatusOK}, {"2026-03-20T00:00:00Z", http.StatusServiceUnavailable}} {
		set(tc.at)
		rec := httptest.NewRecorder()
		m.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/healthz", nil))
		var h Health
		if rec.Code != tc.code || json.Unmarshal(rec.Body.Bytes(), &h) != nil || len(h.Jobs) != 1 || h.Jobs[0].LastRun == nil ||
			rec.Header().Get("Content-Type") != "application/json" || h.Healthy != (tc.code == http.StatusOK) {
			t.Fatalf("at %s: %d %s", tc.at, rec.Code, rec.Body)
		}
	}
	rec := httptest.NewRecorder()
	m.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/healthz", nil))
	if rec.Code != http.StatusMethodNotAllowed {
		t.Fatalf("POST /healthz: %d", rec.Code)
	}
}

// A job whose time came while no scheduler ran (its latest run is older
// than its previous activation) runs once at start; one that is up to
// date waits for its time. The failure a restarted scheduler finds in the
// database shows in its health before any run.
func TestScheduleCatchesUpAfterDowntime(t *testing.T) {
	var late, fresh atomic.Int32
	schedStep(t, "probe-late", func(context.Context, *job.Env, uuid.UUID) (job.Result, error) { late.Add(1); return job.Result{}, nil })
	schedStep(t, "probe-fresh", func(context.Context, *job.Env, uuid.UUID) (job.Result, error) { fresh.Add(1); return job.Result{}, nil })
	r, _ := schedRunner(t, time.Second,
		configs.Job{Name: "late", Cron: "@daily", Run: []string{"probe-late"}},
		configs.Job{Name: "fresh", Cron: "@hourly", Run: []string{"probe-fresh"}})
	ctx := context.Background()
	st, err := store.Open(ctx, r.Config.Store.Path)
	if err != nil {
		t.Fatal(err)
	}
	old := time.Now().UTC().AddDate(0, 0, -3)
	recent := time.Now().UTC().Add(-time.Second)
	for _, ri := range []store.RunInfo{
		{ID: store.NewRunID(), Job: "late", Command: "schedule", Started: old, Finished: &old, Status: store.RunOK},
		{ID: store.NewRunID(), Job: "fresh", Command: "schedule", Started: recent, Finished: &recent, Status: store.RunFailed, Error: "interface down"},
	} {
		if err := st.RecordRun(ctx, ri); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := st.Publish(ctx); err != nil {
		t.Fatal(err)
	}
	st.Close()

	s, stop := schedStart(t, r, ScheduleOptions{})
	h := s.Health()
	if h.Healthy || h.Jobs[1].Healthy || !strings.Contains(h.Jobs[1].Reason, "was failed: interface down") || h.Jobs[0].LastRun == nil {
		t.Fatalf("health of a restarted scheduler: %+v", h)
	}
	schedWait(t, 5*time.Second, "the missed run", func() bool { return s.Health().Jobs[0].Runs[store.RunOK] == 1 })
	time.Sleep(1500 * time.Millisecond) // no second catch-up
	if _, err := stop(); err != nil {
		t.Fatal(err)
	}
	if late.Load() != 1 || fresh.Load() != 0 {
		t.Fatalf("late ran %d times, fresh %d; want 1 and 0", late.Load(), fresh.Load())
	}
}
