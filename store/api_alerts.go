package store

import (
	"context"
	"database/sql"
	"fmt"
)

// WriteTx runs fn in one transaction on the store's database: how a
// capability writes its own records (the alerts package its alerts and
// alert_settings tables). A read-only store refuses it, naming what;
// fn's errors come back as fn words them.
func (s *Store) WriteTx(ctx context.Context, what string, fn func(tx *sql.Tx) error) error {
	if err := s.writable(what); err != nil {
		return err
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	defer tx.Rollback()
	if err := fn(tx); err != nil {
		return err
	}
	return tx.Commit()
}
