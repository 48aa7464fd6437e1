package store

import (
	"context"
	"database/sql"
)

// InTx runs fn in one transaction on one connection of the store's
// database: how a capability writes its own records (package deliver its
// deliveries, package alerts its alerts and alert_settings). A read-only store refuses it, naming what; a cancel landing
// during COMMIT does not report as failed work that is in the database.
func (s *Store) InTx(ctx context.Context, what string, fn func(conn *sql.Conn) error) error {
	if err := s.writable(what); err != nil {
		return err
	}
	return s.inTx(ctx, fn)
}
