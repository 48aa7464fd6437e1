package store

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
)

// Delivered reports whether the workbook at path was already delivered to
// target.
func (s *Store) Delivered(ctx context.Context, target, path string) (bool, error) {
	var n int
	if err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM deliveries WHERE target = ? AND path = ?`, target, path).Scan(&n); err != nil {
		return false, fmt.Errorf("read deliveries: %w", err)
	}
	return n > 0, nil
}

// RecordDelivery notes that the workbook at path, with the given content
// hash, went to target.
func (s *Store) RecordDelivery(ctx context.Context, target, path, sha256 string, runID uuid.UUID) error {
	if err := s.writable("record delivery"); err != nil {
		return err
	}
	if _, err := s.db.ExecContext(ctx, `INSERT INTO deliveries VALUES (?, ?, ?, ?, ?)`,
		target, path, sha256, time.Now().UTC(), runID.String()); err != nil {
		return fmt.Errorf("record delivery of %s to %s: %w", path, target, err)
	}
	return nil
}
