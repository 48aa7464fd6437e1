package store

import (
	"context"
	"database/sql"
	"fmt"
	"io/fs"
	"strings"
	"sync"
	"time"

	"github.com/tally-dev/tally"
	tallysql "github.com/tally-dev/tally/sql"
)

// monthCloseKeysVersion is the migration that makes month_close_keys.
const monthCloseKeysVersion = 18

// closeKeysQuery is sql/close/month_close_keys.sql: a closed month's keys
// at the grain of its figures, for every closed month.
var closeKeysQuery = sync.OnceValues(func() (string, error) {
	b, err := fs.ReadFile(tallysql.Close, "close/month_close_keys.sql")
	if err != nil {
		return "", fmt.Errorf("read month_close_keys.sql: %w", err)
	}
	return strings.TrimRight(strings.TrimSpace(string(b)), ";"), nil
})

// createMacros (re)creates every macro of sql/macros, on conn inside the
// views' transaction.
func createMacros(ctx context.Context, conn *sql.Conn) error {
	names, err := fs.Glob(tallysql.Macros, "macros/*.sql")
	if err != nil {
		return fmt.Errorf("read macros: %w", err)
	}
	for _, name := range names {
		b, err := fs.ReadFile(tallysql.Macros, name)
		if err != nil {
			return fmt.Errorf("read macro %s: %w", name, err)
		}
		if _, err := conn.ExecContext(ctx, string(b)); err != nil {
			return fmt.Errorf("create macro %s: %w", name, err)
		}
	}
	return nil
}

// keepCloseKeys writes month_close_keys anew for the closed month of
// organization org (of every organization with all), on conn inside the
// caller's transaction. The conditions are on the query's grouping
// columns, which DuckDB takes down to closed_months.
func keepCloseKeys(ctx context.Context, conn *sql.Conn, all bool, org string, month time.Time, basis, g string) error {
	q, err := closeKeysQuery()
	if err != nil {
		return err
	}
	const cond = `month = ? AND basis = ? AND granularity = ? AND (? OR organization = ?)`
	args := []any{month, basis, g, all, org}
	if _, err := conn.ExecContext(ctx, `DELETE FROM month_close_keys WHERE `+cond, args...); err != nil {
		return fmt.Errorf("keep the keys of closed %s: %w", month.Format("2006-01"), err)
	}
	if _, err := conn.ExecContext(ctx, `INSERT INTO month_close_keys SELECT * FROM (`+q+`) WHERE `+cond, args...); err != nil {
		return fmt.Errorf("keep the keys of closed %s: %w", month.Format("2006-01"), err)
	}
	return nil
}

// KeepCloseKeys keeps, on conn inside the transaction that records a close
// of month (for organization org, "" for every organization of the store),
// what its frozen and Correction rows in focus carry besides their figures
// (month_close_keys): the close freezes them with its figures.
func KeepCloseKeys(ctx context.Context, conn *sql.Conn, org string, month time.Time, basis tally.Basis, g tally.Granularity) error {
	return keepCloseKeys(ctx, conn, org == "", org, month, string(basis), string(g))
}

// keepClosesOf keeps month_close_keys anew for each closed month query
// lists (organization, month, basis, granularity; args its parameters).
func keepClosesOf(ctx context.Context, conn *sql.Conn, query string, args ...any) error {
	rows, err := conn.QueryContext(ctx, query, args...)
	if err != nil {
		return fmt.Errorf("read closed_months: %w", err)
	}
	type closed struct {
		org, basis, g string
		month         time.Time
	}
	var cs []closed
	for rows.Next() {
		var c closed
		if err := rows.Scan(&c.org, &c.month, &c.basis, &c.g); err != nil {
			rows.Close()
			return fmt.Errorf("read closed_months: %w", err)
		}
		cs = append(cs, c)
	}
	if err := rows.Close(); err != nil {
		return fmt.Errorf("read closed_months: %w", err)
	}
	for _, c := range cs {
		if err := keepCloseKeys(ctx, conn, false, c.org, c.month, c.basis, c.g); err != nil {
			return err
		}
	}
	return nil
}

// keysInClosedMonths keeps month_close_keys anew for the closed months
// that the usage keys numbered in (lo, hi], just added on conn inside the
// caller's transaction, fall in: a late charge of a closed month that no
// key of it had at close (a new project, meter, payment method or
// currency) carries its sku and the rest on its Correction row, as the
// month's rows do. Loads that may add such keys run one at a time
// (closeKeysMu, taken before their transaction): two would rewrite the
// same rows, and DuckDB would fail the second.
func (s *Store) keysInClosedMonths(ctx context.Context, conn *sql.Conn, lo, hi int64) error {
	if !s.closeKeyed || hi <= lo {
		return nil
	}
	return keepClosesOf(ctx, conn, `SELECT c.organization, c.month, c.basis, c.granularity FROM closed_months c
WHERE EXISTS (SELECT 1 FROM usage_keys ky
    WHERE ky.id > ? AND ky.id <= ? AND ky.organization = c.organization AND ky.basis = c.basis AND ky.granularity = c.granularity
      AND ky.period_month >= c.month AND ky.period_month < c.month + INTERVAL 1 MONTH)`, lo, hi)
}

// mayKeyClosedMonth reports whether a load of organization org's usage of
// basis and granularity g from month from on may add keys to a month
// closed now: its rows count in the month of their date or later (the
// month of date_processed).
func (s *Store) mayKeyClosedMonth(ctx context.Context, org string, basis tally.Basis, g tally.Granularity, from time.Time) (bool, error) {
	if !s.closeKeyed {
		return false, nil
	}
	var n int
	err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM closed_months
WHERE organization = ? AND basis = ? AND granularity = ? AND month + INTERVAL 1 MONTH > ?`, org, string(basis), string(g), from).Scan(&n)
	if err != nil {
		return false, fmt.Errorf("read closed_months: %w", err)
	}
	return n > 0, nil
}

// keepMissingCloseKeys fills month_close_keys for the closed months that
// have no row in it (those closed before migration 0018), by the query a
// close runs, in one transaction.
func (s *Store) keepMissingCloseKeys(ctx context.Context) error {
	if !s.closeKeyed {
		return nil
	}
	return s.inTx(ctx, func(conn *sql.Conn) error {
		return keepClosesOf(ctx, conn, `SELECT c.organization, c.month, c.basis, c.granularity FROM closed_months c
WHERE NOT EXISTS (SELECT 1 FROM month_close_keys k
    WHERE k.organization = c.organization AND k.month = c.month AND k.basis = c.basis AND k.granularity = c.granularity)`)
	})
}
