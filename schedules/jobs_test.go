package schedules

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/tally-dev/tally"
	"github.com/tally-dev/tally/closes"
	"github.com/tally-dev/tally/configs"
	"github.com/tally-dev/tally/fetch/sim"
	"github.com/tally-dev/tally/internal/secret"
	"github.com/tally-dev/tally/job"
	"github.com/tally-dev/tally/reports"
	"github.com/tally-dev/tally/store"
)

// A job's steps run in order under one run id; a partial step lets the
// next run and makes the run partial; a failing step stops the job; a step
// the build does not provide fails the job before any step runs.
func TestRunJobSteps(t *testing.T) {
	var mu sync.Mutex
	var trail []string
	step := func(name string, err error) job.Step {
		return func(ctx context.Context, env *job.Env, runID uuid.UUID) (job.Result, error) {
			mu.Lock()
			trail = append(trail, name+" "+runID.String())
			mu.Unlock()
			return job.Result{Rows: 2, Windows: 1}, err
		}
	}
	schedStep(t, "probe-a", step("a", nil))
	schedStep(t, "probe-partial", step("partial", &job.Partial{Failures: []job.Failure{{Kind: job.KindReference, Err: errors.New("rate card 7 unreadable")}}}))
	schedStep(t, "probe-fail", step("fail", errors.New("disk full")))
	schedStep(t, "probe-b", step("b", nil))
	schedStep(t, "probe-unsent", step("unsent", job.StepErrors(errors.New("2 alert(s) not sent"))))
	schedStep(t, "probe-refuse", step("refuse", &closes.RefusedError{Reason: "--month 2026-10 is not fully loaded for organization us"}))
	schedStep(t, "probe-week", step("week", &reports.GranularityError{Field: "usage.granularity", Granularity: tally.Week, Month: time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC), Basis: tally.BasisUsage}))

	tests := []struct {
		name, status, err string
		steps, ran        []string
		also              string // a failure of an earlier step the error also lists
		refused           bool   // the run is refused (exit 2)
	}{
		{"in order", store.RunOK, "", []string{"probe-a", "probe-b"}, []string{"a", "b"}, "", false},
		{"partial goes on", store.RunPartial, "rate card 7 unreadable", []string{"probe-partial", "probe-b"}, []string{"partial", "b"}, "", false},
		{"failure stops", store.RunFailed, "step probe-fail: disk full", []string{"probe-a", "probe-fail", "probe-b"}, []string{"a", "fail"}, "", false},
		{"missing step", store.RunFailed, `job "missing step": step nonesuch is not provided by this build of tally (it provides `, []string{"probe-a", "nonesuch"}, nil, "", false},
		// Every failure of the run, not the last partial step's.
		{"partial steps all listed", store.RunPartial, "2 alert(s) not sent", []string{"probe-partial", "probe-unsent"}, []string{"partial", "unsent"}, "rate card 7 unreadable", false},
		// A step that cannot do its part after an earlier step's partial
		// failure: partial, and the steps after it run.
		{"refusal goes on", store.RunPartial, "step probe-refuse did not do its part: --month 2026-10 is not fully loaded", []string{"probe-partial", "probe-refuse", "probe-b"}, []string{"partial", "refuse", "b"}, "rate card 7 unreadable", false},
		{"failure lists what failed before", store.RunFailed, "step probe-fail: disk full", []string{"probe-partial", "probe-fail", "probe-b"}, []string{"partial", "fail"}, "rate card 7 unreadable", false},
		{"a report refused after a fetch goes on", store.RunPartial, `step probe-week did not do its part: usage.granularity "week" cannot serve the monthly report for 2026-10`, []string{"probe-a", "probe-week", "probe-b"}, []string{"a", "week", "b"}, "", false},
		{"only refusals", store.RunFailed, "--month 2026-10 is not fully loaded", []string{"probe-refuse"}, []string{"refuse"}, "", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			trail = nil
			jb := configs.Job{Name: tc.name, Cron: "@daily", Run: tc.steps}
			r, _ := schedRunner(t, time.Second, jb)
			sum, err := r.RunJob(context.Background(), "run", jb)
			if (err == nil) != (tc.err == "") || (err != nil && (!strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), tc.also))) {
				t.Fatalf("error %v, want %q and %q", err, tc.err, tc.also)
			}
			if got := errors.As(err, new(*closes.RefusedError)); got != tc.refused {
				t.Errorf("refused %v, want %v: %v", got, tc.refused, err)
			}
			if got := errors.As(err, new(*job.Partial)); got != (tc.status == store.RunPartial) {
				t.Errorf("partial %v, want %v: %v", got, tc.status == store.RunPartial, err)
			}
			var ran []string
			for _, e := range trail {
				name, id, _ := strings.Cut(e, " ")
				ran = append(ran, name)
				if id != sum.Run.ID.String() {
					t.Errorf("step %s ran under run %s, the run is %s", name, id, sum.Run.ID)
				}
			}
			if strings.Join(ran, ",") != strings.Join(tc.ran, ",") {
				t.Errorf("steps ran %v, want %v", ran, tc.ran)
			}
			runs := schedRuns(t, r)
			if len(runs) != 1 || runs[0].ID != sum.Run.ID || runs[0].Job != tc.name || runs[0].Command != "run" ||
				runs[0].Status != tc.status || runs[0].Rows != int64(2*len(tc.ran)) || runs[0].Windows != len(tc.ran) ||
				!strings.Contains(runs[0].Error, tc.err) || !strings.Contains(runs[0].Error, tc.also) {
				t.Errorf("recorded %+v", runs)
			}
			if sum.Run.Status != tc.status {
				t.Errorf("summary status %s", sum.Run.Status)
			}
		})
	}
}

// The real steps: fetch, then report, as one run of the job against the
// simulated interface.
func TestRunJobFetchAndReport(t *testing.T) {
	now := time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)
	srv := sim.New(sim.Options{Token: "tok-sched-test", Seed: 5, Start: time.Date(2026, 1, 20, 0, 0, 0, 0, time.UTC), Now: func() time.Time { return now }})
	hs := httptest.NewServer(srv)
	defer hs.Close()
	dir := t.TempDir()
	cfg, err := configs.Parse([]byte(fmt.Sprintf(`api:
  base_url: %s
usage:
  granularity: day
  start: 2026-01-20
store:
  path: tally.duckdb
reports:
  dir: out
  months: [previous]
schedule:
  jobs:
    - {name: nightly, cron: "CRON_TZ=Europe/Berlin 30 2 * * *", run: [fetch, report]}
`, hs.URL)), dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := &Runner{Config: cfg, Token: secret.New("tok-sched-test"), Log: schedNop(), Version: "test", Now: func() time.Time { return now }}
	sum, err := r.RunJob(context.Background(), "schedule", cfg.Schedule.Jobs[0])
	if err != nil {
		t.Fatal(err)
	}
	truth := srv.Truth(tally.UsageQuery{Window: tally.Window{Start: cfg.Usage.Start, End: time.Date(2026, 3, 11, 0, 0, 0, 0, time.UTC), Granularity: tally.Day}})
	if sum.Run.Status != store.RunOK || sum.Run.Rows != int64(truth.Rows) || sum.Run.Windows == 0 || sum.Run.Published == "" {
		t.Fatalf("run %+v, truth %d rows", sum.Run, truth.Rows)
	}
	if len(sum.Outputs) != 1 || !strings.HasSuffix(sum.Outputs[0], "2026-02.xlsx") {
		t.Fatalf("outputs %v", sum.Outputs)
	}
	if _, err := os.Stat(sum.Outputs[0]); err != nil {
		t.Fatal(err)
	}
	runs := schedRuns(t, r)
	if len(runs) != 1 || runs[0].Job != "nightly" || runs[0].Command != "schedule" || runs[0].Rows != int64(truth.Rows) {
		t.Fatalf("runs %+v", runs)
	}
}
