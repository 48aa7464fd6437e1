package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/tally-dev/tally"
	tallysql "github.com/tally-dev/tally/sql"
)

// A table the load keeps (daily_usage_cost, daily_usage_totals,
// daily_baselines) is filled from the whole history when a migration makes
// or reshapes it. In one transaction that fill held every month's rows
// until the commit: its memory grew with the history, and at 100 million
// usage rows it ran out of the writer's 160 MB limit. So the migration only
// empties the table and lists it in kept_refills; the fill then runs a
// month at a time, each month its own transaction, noting how far it got.
// A kill leaves the table listed, and the next writer to open the store
// goes on from the month it reached. The listing is migration machinery,
// like schema_migrations, so it is made beside that table rather than by a
// migration: a migration must list its table in its own transaction,
// whichever migrations a store still lacks.
const createRefillsTable = `CREATE TABLE IF NOT EXISTS kept_refills (
    kept        VARCHAR PRIMARY KEY,
    done_before DATE
)`

var refillsComments = []tallysql.Comment{
	{Kind: "TABLE", Object: "kept_refills", Text: "Tables the load keeps that a migration emptied and Tally is filling again from usage, a month at a time; empty once every fill is done"},
	{Kind: "TABLE", Object: "kept_refills", Column: "kept", Text: "the table: daily_usage_cost, daily_usage_totals or daily_baselines"},
	{Kind: "TABLE", Object: "kept_refills", Column: "done_before", Text: "the months before this one are filled; NULL when none is yet"},
}

// The kept tables, in the order they are filled: the baselines read the
// day cost.
const (
	keptDayCost   = "daily_usage_cost"
	keptTotals    = "daily_usage_totals"
	keptBaselines = "daily_baselines"
)

var keptOrder = []string{keptDayCost, keptTotals, keptBaselines}

// keptNeeds is the migration whose schema a kept table's fill reads (this
// Tally's definitions): a store an older migration set made (tests) keeps
// its listing until it is migrated that far.
var keptNeeds = map[string]int{keptDayCost: organizationsVersion, keptTotals: dayTotalsDetailVersion, keptBaselines: anomalyBaselinesVersion}

// markRefill empties table kept and lists it to fill, on conn, inside the
// caller's transaction (a migration's).
func markRefill(ctx context.Context, conn *sql.Conn, kept string) error {
	if _, err := conn.ExecContext(ctx, `DELETE FROM `+kept); err != nil {
		return fmt.Errorf("empty %s: %w", kept, err)
	}
	if _, err := conn.ExecContext(ctx, `INSERT INTO kept_refills (kept, done_before) VALUES (?, NULL)
ON CONFLICT (kept) DO UPDATE SET done_before = NULL`, kept); err != nil {
		return fmt.Errorf("list %s to fill: %w", kept, err)
	}
	return nil
}

// finishRefills fills every table kept_refills lists, a month at a time
// from the month its last fill reached, and removes it from the list when
// done.
func (s *Store) finishRefills(ctx context.Context) error {
	var schema int
	if err := s.db.QueryRowContext(ctx, `SELECT coalesce(max(version), 0) FROM schema_migrations`).Scan(&schema); err != nil {
		return fmt.Errorf("read schema_migrations: %w", err)
	}
	done := map[string]*time.Time{}
	rows, err := s.db.QueryContext(ctx, `SELECT kept, done_before FROM kept_refills`)
	if err != nil {
		return fmt.Errorf("read kept_refills: %w", err)
	}
	for rows.Next() {
		var kept string
		var before sql.NullTime
		if err := rows.Scan(&kept, &before); err != nil {
			rows.Close()
			return fmt.Errorf("read kept_refills: %w", err)
		}
		var t *time.Time
		if before.Valid {
			u := before.Time.UTC()
			t = &u
		}
		done[kept] = t
	}
	if err := rows.Close(); err != nil {
		return fmt.Errorf("read kept_refills: %w", err)
	}
	for _, kept := range keptOrder {
		before, listed := done[kept]
		if !listed || schema < keptNeeds[kept] {
			continue
		}
		if err := s.refill(ctx, kept, before); err != nil {
			return fmt.Errorf("fill %s: %w", kept, err)
		}
	}
	return nil
}

// FillProgress is a month of a kept table's fill, committed.
type FillProgress struct {
	Table  string    // daily_usage_cost, daily_usage_totals or daily_baselines; usage: its rows' keys numbered (usagekeys.go)
	Month  time.Time // the month just filled (its first day, UTC)
	Done   int       // the months of this fill committed so far, this one included
	Months int       // the months this fill has to do (those a killed fill reached are not counted)
	Took   time.Duration
}

// refill fills table kept for the months from before on (every month when
// nil), each in its own transaction that also notes the month reached, and
// then removes kept from kept_refills.
func (s *Store) refill(ctx context.Context, kept string, before *time.Time) error {
	months, err := keptMonths(ctx, s.db, kept)
	if err != nil {
		return err
	}
	// A month's fill is the refresh a load of that month's window runs, so
	// it runs as loads do, on one thread (loadThreads): on two, each kept
	// its own hash table of the month's sums, and a month of 4,000,000
	// hourly rows ran out of the writer's 160 MB.
	// But with the writer's memory, not a load's: a month's day cost is
	// summed from its usage rows, not from a window's fresh totals.
	end, err := s.oneThread(ctx)
	if err != nil {
		return err
	}
	defer end()
	todo := months[:0:0]
	for _, m := range months {
		if before == nil || !m.month.Before(*before) {
			todo = append(todo, m)
		}
	}
	for i, m := range todo {
		began := time.Now()
		next := m.month.AddDate(0, 1, 0)
		if err := s.inTx(ctx, func(conn *sql.Conn) error {
			if err := fillMonth(ctx, conn, kept, m); err != nil {
				return err
			}
			_, err := conn.ExecContext(ctx, `UPDATE kept_refills SET done_before = CAST(? AS DATE) WHERE kept = ?`, next, kept)
			return err
		}); err != nil {
			return fmt.Errorf("%s: %w", m.month.Format("2006-01"), err)
		}
		if s.filled != nil {
			s.filled(FillProgress{Table: kept, Month: m.month, Done: i + 1, Months: len(todo), Took: time.Since(began)})
		}
	}
	return s.inTx(ctx, func(conn *sql.Conn) error {
		_, err := conn.ExecContext(ctx, `DELETE FROM kept_refills WHERE kept = ?`, kept)
		return err
	})
}

// keptMonth is a month to fill, and for daily_usage_totals the
// organizations, granularities and bases whose usage falls in it.
type keptMonth struct {
	month time.Time
	parts []totalsPart
}

type totalsPart struct{ org, g, basis string }

// keptMonths lists, oldest first, the months table kept has rows for when
// filled from usage: the months of usage's date for the day cost (its day
// is date's), of period_at for the totals, of the day cost's days for the
// baselines. One pass over usage lists them all.
func keptMonths(ctx context.Context, q Querier, kept string) ([]keptMonth, error) {
	query := map[string]string{
		keptDayCost: `SELECT DISTINCT date_trunc('month', date), '', '', '' FROM usage WHERE basis = 'usage' ORDER BY ALL`,
		keptTotals: `SELECT DISTINCT date_trunc('month', CASE WHEN basis = 'reported' THEN date_processed ELSE date END) AS m, organization, granularity, basis
FROM usage WHERE m IS NOT NULL ORDER BY ALL`,
		keptBaselines: `SELECT DISTINCT CAST(date_trunc('month', day) AS TIMESTAMP), '', '', '' FROM daily_usage_cost ORDER BY ALL`,
	}[kept]
	rows, err := q.QueryContext(ctx, query)
	if err != nil {
		return nil, fmt.Errorf("list the months: %w", err)
	}
	defer rows.Close()
	var out []keptMonth
	for rows.Next() {
		var m time.Time
		var p totalsPart
		if err := rows.Scan(&m, &p.org, &p.g, &p.basis); err != nil {
			return nil, fmt.Errorf("list the months: %w", err)
		}
		if m = m.UTC(); len(out) == 0 || !out[len(out)-1].month.Equal(m) {
			out = append(out, keptMonth{month: m})
		}
		if kept == keptTotals {
			out[len(out)-1].parts = append(out[len(out)-1].parts, p)
		}
	}
	return out, rows.Err()
}

// fillMonth writes table kept's rows of month m from usage, on conn.
func fillMonth(ctx context.Context, conn *sql.Conn, kept string, m keptMonth) error {
	from, to := m.month, m.month.AddDate(0, 1, 0)
	switch kept {
	case keptDayCost:
		return refreshAllDayCost(ctx, conn, from, to)
	case keptBaselines:
		// The days of m and the 28 after them: the next month's fill
		// writes its own again, with the same rows.
		return refreshBaselines(ctx, conn, "", from, to)
	}
	// One statement for each organization, granularity and basis, in
	// month order: each month's totals lie together, so a condition on
	// month skips the other row groups.
	for _, p := range m.parts {
		if err := refreshDayTotals(ctx, conn, p.org, tally.Granularity(p.g), p.basis, from, to, false); err != nil {
			return err
		}
	}
	return nil
}

// RefillKept fills daily_usage_cost, daily_usage_totals and
// daily_baselines again from every usage row, a month at a time. Tally's
// loads keep them themselves; this is for usage written by other means
// (the scale bench's copied history).
func (s *Store) RefillKept(ctx context.Context) error {
	if err := s.writable("fill the kept tables"); err != nil {
		return err
	}
	if err := s.markRefills(ctx); err != nil {
		return err
	}
	return s.finishRefills(ctx)
}

// markRefills empties every kept table and lists it to fill, in one
// transaction.
func (s *Store) markRefills(ctx context.Context) error {
	return s.inTx(ctx, func(conn *sql.Conn) error {
		for _, kept := range keptOrder {
			if err := markRefill(ctx, conn, kept); err != nil {
				return err
			}
		}
		return nil
	})
}
