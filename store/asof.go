package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"time"

	"github.com/tally-dev/tally"
)

// asOfVariable is the DuckDB variable the forecast views (forecast_days,
// forecasts) read their replay day from: the days from it on are not yet
// data. Unset, every day loaded counts.
const asOfVariable = "tally_as_of"

// AsOfConn returns one connection of the store on which the forecasts
// (forecast_days, forecasts, and the budget figures read from them) are
// as they stood on the morning of asOf, a replay's day (--as-of): the
// usage of the days from asOf on and the ledger past asOf - 1 are not yet
// data. The zero asOf gives a connection without a cap. The variable is
// the connection's, so the caller reads on that connection only and calls
// release when done, which unsets it; a connection that cannot unset it
// is dropped from the pool rather than left capping later reads.
func (s *Store) AsOfConn(ctx context.Context, asOf time.Time) (conn *sql.Conn, release func(), err error) {
	conn, err = s.db.Conn(ctx)
	if err != nil {
		return nil, nil, err
	}
	if asOf.IsZero() {
		return conn, func() { conn.Close() }, nil
	}
	// The day is formatted by Tally from a time, never text a user typed.
	set := fmt.Sprintf("SET VARIABLE %s = DATE '%s'", asOfVariable, asOf.UTC().Format(tally.DateLayout))
	release = func() {
		if _, err := conn.ExecContext(context.WithoutCancel(ctx), "RESET VARIABLE "+asOfVariable); err != nil {
			_ = conn.Raw(func(any) error { return driver.ErrBadConn })
		}
		conn.Close()
	}
	if _, err := conn.ExecContext(ctx, set); err != nil {
		release()
		return nil, nil, fmt.Errorf("replay as of %s: %w", asOf.UTC().Format(tally.DateLayout), err)
	}
	return conn, release, nil
}

// asOfCap is the replay day q's connection caps the forecasts at
// (AsOfConn): the zero time when none.
func asOfCap(ctx context.Context, q Querier) (time.Time, error) {
	var d sql.NullTime
	if err := ScanOne(ctx, q, "SELECT CAST(getvariable('"+asOfVariable+"') AS DATE)", nil, &d); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return time.Time{}, nil
		}
		return time.Time{}, err
	}
	if !d.Valid {
		return time.Time{}, nil
	}
	return d.Time.UTC(), nil
}

// AsOfSource is what a workbook of a replay reads (its Budgets sheet reads
// the forecasts): the store's pool when asOf is zero, else one connection
// capped at asOf (AsOfConn). release gives it back.
func (s *Store) AsOfSource(ctx context.Context, asOf time.Time) (src Querier, release func(), err error) {
	if asOf.IsZero() {
		return s.db, func() {}, nil
	}
	return s.AsOfConn(ctx, asOf)
}
