package store

import (
	"context"
	"database/sql/driver"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/tally-dev/tally"
)

// NewRunID returns a new run id: a UUID v7, so ids sort by start time.
func NewRunID() uuid.UUID {
	return uuid.Must(uuid.NewV7())
}

// Run statuses. A run is "running" from BeginRun until FinishRun.
const (
	RunRunning = "running"
	RunOK      = "ok"
	RunPartial = "partial"
	RunFailed  = "failed"
	RunSkipped = "skipped"
)

// RunResult is how a run ended.
type RunResult struct {
	Status  string // ok, partial, failed or skipped
	Err     string // what went wrong, for partial and failed runs
	Rows    int64  // usage rows loaded
	Windows int    // windows loaded
	// Warnings are what went wrong without failing the run (an optional
	// resource not offered); tally status shows them.
	Warnings []string
}

// BeginRun records the start of a run of command (and of the scheduled
// job, when there is one) with status "running".
func (s *Store) BeginRun(ctx context.Context, id uuid.UUID, command, job string) error {
	return s.BeginRunAsOf(ctx, id, command, job, time.Time{})
}

// BeginRunAsOf is BeginRun for a run that counts from asOf as "today" (a
// replay, --as-of); the zero asOf is a run as of its own day.
func (s *Store) BeginRunAsOf(ctx context.Context, id uuid.UUID, command, job string, asOf time.Time) error {
	if err := s.writable("begin run"); err != nil {
		return err
	}
	if command == "" {
		return fmt.Errorf("begin run %s: command is empty", id)
	}
	var day driver.Value
	if !asOf.IsZero() {
		day = asOf.UTC().Format(tally.DateLayout)
	}
	if _, err := s.db.ExecContext(ctx, `INSERT INTO runs (id, job, command, started, status, as_of) VALUES (?::UUID, ?, ?, ?, ?, CAST(? AS DATE))`,
		id.String(), textOrNull(job), command, time.Now().UTC(), RunRunning, day); err != nil {
		return fmt.Errorf("begin run %s: %w", id, err)
	}
	return nil
}

// FinishRun records how the run id ended.
func (s *Store) FinishRun(ctx context.Context, id uuid.UUID, r RunResult) error {
	if err := s.writable("finish run"); err != nil {
		return err
	}
	switch r.Status {
	case RunOK, RunPartial, RunFailed, RunSkipped:
	default:
		return fmt.Errorf("finish run %s: status %q is not one of ok, partial, failed, skipped", id, r.Status)
	}
	res, err := s.db.ExecContext(ctx, `UPDATE runs SET finished = ?, status = ?, error = ?, rows = ?, windows = ?, warnings = ? WHERE id = ?::UUID`,
		time.Now().UTC(), r.Status, message(r.Err), r.Rows, r.Windows, message(strings.Join(r.Warnings, "\n")), id.String())
	if err != nil {
		return fmt.Errorf("finish run %s: %w", id, err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return fmt.Errorf("finish run %s: %w", id, err)
	} else if n == 0 {
		return fmt.Errorf("finish run %s: no such run; BeginRun records it", id)
	}
	return nil
}

// RecordRun inserts a run that was noted outside the database, such as a
// run skipped because another process held the lock. A run whose id is
// already recorded is left as it is, so recording twice is harmless.
func (s *Store) RecordRun(ctx context.Context, r RunInfo) error {
	if err := s.writable("record run"); err != nil {
		return err
	}
	switch r.Status {
	case RunOK, RunPartial, RunFailed, RunSkipped:
	default:
		return fmt.Errorf("record run %s: status %q is not one of ok, partial, failed, skipped", r.ID, r.Status)
	}
	if r.Command == "" || r.Started.IsZero() {
		return fmt.Errorf("record run %s: command and start time are required", r.ID)
	}
	var finished driver.Value
	if r.Finished != nil {
		finished = r.Finished.UTC()
	}
	if _, err := s.db.ExecContext(ctx, `INSERT OR IGNORE INTO runs (id, job, command, started, finished, status, error, rows, windows)
		VALUES (?::UUID, ?, ?, ?, ?, ?, ?, ?, ?)`,
		r.ID.String(), textOrNull(r.Job), r.Command, r.Started.UTC(), finished, r.Status, message(r.Error), r.Rows, r.Windows); err != nil {
		return fmt.Errorf("record run %s: %w", r.ID, err)
	}
	return nil
}

// FailUnfinished marks every run still "running" as failed with reason.
// Only the lock holder may call it: while it holds the lock no other run
// is in progress, so such a run is one whose process died before it could
// record its outcome.
func (s *Store) FailUnfinished(ctx context.Context, reason string) (int64, error) {
	if err := s.writable("fail unfinished runs"); err != nil {
		return 0, err
	}
	res, err := s.db.ExecContext(ctx, `UPDATE runs SET finished = ?, status = ?, error = ? WHERE status = ?`,
		time.Now().UTC(), RunFailed, message(reason), RunRunning)
	if err != nil {
		return 0, fmt.Errorf("fail unfinished runs: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("fail unfinished runs: %w", err)
	}
	return n, nil
}
