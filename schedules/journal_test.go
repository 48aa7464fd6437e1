package schedules

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/tally-dev/tally/configs"
	"github.com/tally-dev/tally/job"
	"github.com/tally-dev/tally/store"
)

// A run that finds the lock held waits schedule.lock_wait, then gives up
// with an error naming the holder, and its skip is noted beside the
// database (which it cannot open) until the next run folds it into runs.
func TestLockHeldRunSkippedAndRecorded(t *testing.T) {
	var ran int
	schedStep(t, "probe-count", func(context.Context, *job.Env, uuid.UUID) (job.Result, error) {
		ran++
		return job.Result{}, nil
	})
	job := configs.Job{Name: "nightly", Cron: "@daily", Run: []string{"probe-count"}}
	r, _ := schedRunner(t, time.Second, job)
	r.Config.Schedule.LockWait = 300 * time.Millisecond
	db := r.Config.Store.Path

	lock, err := store.AcquireLock(context.Background(), db, "fetch", 0)
	if err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	sum, err := r.RunJob(context.Background(), "schedule", job)
	waited := time.Since(began)
	var se *SkippedError
	var le *store.LockedError
	if !errors.As(err, &se) || !errors.As(err, &le) {
		t.Fatalf("run with the lock held: %v, want a *SkippedError wrapping a *store.LockedError", err)
	}
	if waited < 300*time.Millisecond || ran != 0 {
		t.Fatalf("gave up after %s, ran %d steps", waited, ran)
	}
	holder := fmt.Sprintf("pid %d (command %q", os.Getpid(), "fetch")
	if !strings.Contains(err.Error(), "run skipped after waiting 300ms for the lock") || !strings.Contains(err.Error(), holder) {
		t.Fatalf("error %q does not name the holder", err)
	}
	if sum.Run.Status != store.RunSkipped || sum.Run.ID == uuid.Nil || sum.Run.Job != "nightly" || sum.Run.Finished == nil {
		t.Fatalf("outcome %+v", sum.Run)
	}
	pending, err := store.PendingRuns(db)
	if err != nil || len(pending) != 1 || pending[0].ID != sum.Run.ID || pending[0].Status != store.RunSkipped ||
		!strings.Contains(pending[0].Error, holder) || pending[0].Job != "nightly" || pending[0].Command != "schedule" {
		t.Fatalf("pending %+v, %v", pending, err)
	}
	if fi, err := os.Stat(store.JournalPath(db)); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("journal %v %v", fi, err)
	}
	lock.Release()

	next, err := r.RunJob(context.Background(), "schedule", job)
	if err != nil || ran != 1 {
		t.Fatalf("next run: %v (%d steps)", err, ran)
	}
	runs := schedRuns(t, r)
	if len(runs) != 2 || runs[0].ID != sum.Run.ID || runs[0].Status != store.RunSkipped || !strings.Contains(runs[0].Error, holder) ||
		runs[1].ID != next.Run.ID || runs[1].Status != store.RunOK {
		t.Fatalf("runs after the fold: %+v", runs)
	}
	if p, err := store.PendingRuns(db); err != nil || len(p) != 0 {
		t.Fatalf("still pending after the fold: %+v, %v", p, err)
	}
	if m, _ := filepath.Glob(store.JournalPath(db) + "*"); len(m) != 0 {
		t.Fatalf("journal files left: %v", m)
	}
}

// A run whose process died (its row still says running) is closed as
// failed by the next run, which alone can hold the lock.
func TestDeadRunClosedByNextRun(t *testing.T) {
	schedStep(t, "probe-nop", func(context.Context, *job.Env, uuid.UUID) (job.Result, error) { return job.Result{}, nil })
	job := configs.Job{Name: "j", Cron: "@daily", Run: []string{"probe-nop"}}
	r, _ := schedRunner(t, time.Second, job)
	st, err := store.Open(context.Background(), r.Config.Store.Path)
	if err != nil {
		t.Fatal(err)
	}
	dead := store.NewRunID()
	if err := st.BeginRun(context.Background(), dead, "fetch", ""); err != nil {
		t.Fatal(err)
	}
	st.Close()
	if _, err := r.RunJob(context.Background(), "schedule", job); err != nil {
		t.Fatal(err)
	}
	runs := schedRuns(t, r)
	if len(runs) != 2 || runs[0].ID != dead || runs[0].Status != store.RunFailed || !strings.Contains(runs[0].Error, "interrupted") || runs[1].Status != store.RunOK {
		t.Fatalf("runs %+v", runs)
	}
}
