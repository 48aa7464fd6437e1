package store

import (
	"context"
	"slices"
	"testing"
	"time"
)

// Runs noted outside the database (skipped while another process held it)
// are recorded once whatever the number of tries, and a job's latest run
// and last success come out per job.
func TestRecordRunAndJobRuns(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	t0 := time.Date(2026, 3, 1, 2, 30, 0, 0, time.UTC)

	ok := NewRunID()
	if err := s.BeginRun(ctx, ok, "schedule", "nightly"); err != nil {
		t.Fatal(err)
	}
	if err := s.FinishRun(ctx, ok, RunResult{Status: RunOK, Rows: 10, Windows: 2}); err != nil {
		t.Fatal(err)
	}
	// Started later than the ok run: the latest.
	fin := time.Now().UTC().Add(time.Hour)
	skipped := RunInfo{ID: NewRunID(), Job: "nightly", Command: "schedule", Started: fin.Add(-time.Minute), Finished: &fin,
		Status: RunSkipped, Error: "the database is locked by pid 7"}
	for range 2 {
		if err := s.RecordRun(ctx, skipped); err != nil {
			t.Fatal(err)
		}
	}
	if n := count(t, s, `SELECT count(*) FROM runs WHERE status = 'skipped'`); n != 1 {
		t.Fatalf("%d skipped runs after recording one twice", n)
	}
	other := RunInfo{ID: NewRunID(), Job: "hourly", Command: "schedule", Started: t0, Status: RunFailed, Error: "panic: boom"}
	if err := s.RecordRun(ctx, other); err != nil {
		t.Fatal(err)
	}
	if err := s.RecordRun(ctx, RunInfo{ID: NewRunID(), Command: "fetch", Started: t0, Status: RunRunning}); err == nil {
		t.Fatal("recorded a run as running")
	}
	if err := s.RecordRun(ctx, RunInfo{ID: NewRunID(), Status: RunSkipped}); err == nil {
		t.Fatal("recorded a run without command or start")
	}

	st, err := s.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Jobs) != 2 {
		t.Fatalf("jobs %+v", st.Jobs)
	}
	h, n := st.Jobs[0], st.Jobs[1]
	if h.Job != "hourly" || h.Status != RunFailed || h.LastSuccess != nil || h.Finished != nil || h.Error != "panic: boom" {
		t.Errorf("hourly %+v", h)
	}
	if n.Job != "nightly" || n.ID != skipped.ID || n.Status != RunSkipped || n.Finished == nil || !n.Finished.Equal(fin.Truncate(time.Microsecond)) ||
		n.LastSuccess == nil || n.LastSuccess.After(fin) || time.Since(*n.LastSuccess) > time.Minute {
		t.Errorf("nightly %+v (last success %v)", n, n.LastSuccess)
	}
}

func TestFailUnfinished(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	dead, done := NewRunID(), NewRunID()
	if err := s.BeginRun(ctx, dead, "fetch", ""); err != nil {
		t.Fatal(err)
	}
	if err := s.BeginRun(ctx, done, "run", ""); err != nil {
		t.Fatal(err)
	}
	if err := s.FinishRun(ctx, done, RunResult{Status: RunOK}); err != nil {
		t.Fatal(err)
	}
	n, err := s.FailUnfinished(ctx, "interrupted")
	if err != nil || n != 1 {
		t.Fatalf("FailUnfinished = %d, %v; want 1", n, err)
	}
	if got := scalar(t, s, `SELECT status || ' ' || error || ' ' || (finished IS NOT NULL) FROM runs WHERE id = ?::UUID`, dead.String()); got != "failed interrupted true" {
		t.Errorf("dead run: %v", got)
	}
	if got := scalar(t, s, `SELECT status FROM runs WHERE id = ?::UUID`, done.String()); got != "ok" {
		t.Errorf("finished run: %v", got)
	}
}

// A run's warnings are recorded with it and read back by Status, one a
// line, as tally status shows them.
func TestRunWarnings(t *testing.T) {
	s := openTemp(t)
	ctx := context.Background()
	id := NewRunID()
	if err := s.BeginRun(ctx, id, "fetch", ""); err != nil {
		t.Fatal(err)
	}
	want := []string{"organization: GET /api/v1/organization: 404 NotFound: optional", "locations: 403 Forbidden: optional"}
	if err := s.FinishRun(ctx, id, RunResult{Status: RunOK, Warnings: want}); err != nil {
		t.Fatal(err)
	}
	st, err := s.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Runs) != 1 || !slices.Equal(st.Runs[0].Warnings, want) || st.Runs[0].Status != RunOK {
		t.Fatalf("runs %+v, want one ok run with warnings %q", st.Runs, want)
	}
}
