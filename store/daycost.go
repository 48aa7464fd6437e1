package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/tally-dev/tally"
	tallysql "github.com/tally-dev/tally/sql"
)

// dailyCostVersion is the migration that creates daily_usage_cost; it is
// filled as it is applied (see migrate).
const dailyCostVersion = 8

// dayCostView is usage_day_cost as the database defines it: the table the
// load keeps. sql/views/usage_day_cost.sql, which the workbook and the
// alert checks inline (reading the days they need from usage), defines the
// same rows; daily_usage_cost holds them for every day, so an analyst's
// forecasts or anomalies over the whole history read days, not rows.
const dayCostView = `SELECT organization, day, project, payment_method, family, meter_name, currency, cost FROM daily_usage_cost`

// refreshDayCost replaces organization org's days [from, to) of
// daily_usage_cost with the rows usage_day_cost gives for them now, on conn
// (inside the caller's transaction). Only org's rows: organizations load
// the same days side by side, and each rewrites its own. It reads
// daily_usage_totals, which the caller has brought up to date first.
func refreshDayCost(ctx context.Context, conn *sql.Conn, org string, from, to time.Time) error {
	if _, err := conn.ExecContext(ctx, `DELETE FROM daily_usage_cost WHERE organization = $1 AND day >= CAST($2 AS DATE) AND day < CAST($3 AS DATE)`, org, from, to); err != nil {
		return fmt.Errorf("refresh daily_usage_cost: %w", err)
	}
	if _, err := conn.ExecContext(ctx, dayCostFromTotals, sql.Named("days_from", from), sql.Named("days_to", to), sql.Named("days_org", org)); err != nil {
		return fmt.Errorf("refresh daily_usage_cost: %w", err)
	}
	// The baselines are the store's to rewrite after the commit
	// (settleBaselines): loads side by side would rewrite the same ones.
	if _, err := conn.ExecContext(ctx, `INSERT INTO baseline_dirty (organization, from_day, to_day) VALUES (?, CAST(? AS DATE), CAST(? AS DATE))`, org, from, to); err != nil {
		return fmt.Errorf("mark baselines: %w", err)
	}
	return nil
}

// dayCostFromTotals is sql/views/usage_day_cost.sql's rows for the days
// [$days_from, $days_to) of organization $days_org, summed from
// daily_usage_totals rather than from the usage rows: its rows of basis
// usage are the usage rows summed per day of date (date_day), granularity,
// project, payment method, family, meter and currency, among other
// columns, so their costs summed per usage_day_cost's columns are the same
// exact sums, NULL where every row's is. A load reads its window's daily
// sums, not its rows a second time (at 5,000,000 rows, 1.2 of the
// fetch's CPU seconds). Which of a day's hour and day rows count depends
// on the ledger's windows of its month alone (a whole month's coverage at
// most), so the coverage (usage_coverage_of) reads the organization's
// windows of the days' months only: neither the other organizations'
// ledgers nor the years before.
const dayCostFromTotals = `INSERT INTO daily_usage_cost (organization, day, project, payment_method, family, meter_name, currency, cost)
SELECT u.organization, u.date_day AS day, u.project, u.payment_method, u.family, u.meter_name, u.currency, sum(u.cost) AS cost
FROM daily_usage_totals u
SEMI JOIN usage_coverage_of($days_org,
                            CAST(date_trunc('month', CAST($days_from AS TIMESTAMP)) AS DATE),
                            CAST(date_trunc('month', CAST($days_to AS TIMESTAMP) - INTERVAL 1 DAY) + INTERVAL 1 MONTH AS DATE)) c
    ON c.organization = u.organization AND c.basis = u.basis AND c.granularity = u.granularity AND c.day = u.date_day
WHERE u.basis = 'usage' AND u.granularity IN ('hour', 'day') AND u.organization = $days_org
  AND u.date_day >= CAST($days_from AS DATE) AND u.date_day < CAST($days_to AS DATE)
GROUP BY ALL`

// refreshAllDayCost rebuilds daily_usage_cost's days [from, to) for every
// organization, on conn: when the table is made, and for usage written by
// other means.
func refreshAllDayCost(ctx context.Context, conn *sql.Conn, from, to time.Time) error {
	// usage_day_cost as its file defines it, from the usage rows of the
	// days (DaysWhere, which must reach usage's scan under every view
	// between): the database's own is the table being rebuilt.
	q, err := tallysql.InlineWhere(`INSERT INTO daily_usage_cost (organization, day, project, payment_method, family, meter_name, currency, cost)
SELECT organization, day, project, payment_method, family, meter_name, currency, cost FROM usage_day_cost`, DaysWhere)
	if err != nil {
		return err
	}
	if _, err := conn.ExecContext(ctx, `DELETE FROM daily_usage_cost WHERE day >= CAST($1 AS DATE) AND day < CAST($2 AS DATE)`, from, to); err != nil {
		return fmt.Errorf("refresh daily_usage_cost: %w", err)
	}
	if _, err := conn.ExecContext(ctx, q, sql.Named("days_from", from), sql.Named("days_to", to)); err != nil {
		return fmt.Errorf("refresh daily_usage_cost: %w", err)
	}
	return nil
}

// dayCostSpan is the days [from, to) loading q's window can change in
// usage_day_cost (empty when none), and whether they reach beyond the
// window. Only basis usage at hour, day or month granularity counts
// there. A month window decides whether its months' hour and day rows
// count, but spans whole months itself. An hour or day window decides which
// of the two counts on its own days, and, when a month window covers its
// months too, whether their hour and day rows count at all: then its whole
// months (wide).
func (s *Store) dayCostSpan(ctx context.Context, q tally.UsageQuery) (from, to time.Time, wide bool, err error) {
	w := q.Window
	if q.Basis() != tally.BasisUsage {
		return time.Time{}, time.Time{}, false, nil
	}
	switch w.Granularity {
	case tally.Month:
		return w.Start.UTC(), w.End.UTC(), false, nil
	case tally.Hour, tally.Day:
	default:
		return time.Time{}, time.Time{}, false, nil
	}
	s0, e0 := w.Start.UTC(), w.End.UTC().AddDate(0, 0, -1)
	ms := time.Date(s0.Year(), s0.Month(), 1, 0, 0, 0, 0, time.UTC)
	me := time.Date(e0.Year(), e0.Month(), 1, 0, 0, 0, 0, time.UTC).AddDate(0, 1, 0)
	var n int
	if err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM fetch_windows
WHERE organization = ? AND basis = 'usage' AND granularity = 'month' AND start < CAST(? AS DATE) AND "end" > CAST(? AS DATE)`, q.Organization, me, ms).Scan(&n); err != nil {
		return time.Time{}, time.Time{}, false, err
	}
	if n > 0 {
		return ms, me, true, nil
	}
	return w.Start.UTC(), w.End.UTC(), false, nil
}

// RefreshDayCost recomputes daily_usage_cost for the days [from, to), and
// the baselines that read them (daily_baselines), in one transaction. Tally's loads keep it themselves; this is for usage
// written by other means (the scale bench's copied history).
func (s *Store) RefreshDayCost(ctx context.Context, from, to time.Time) error {
	if err := s.writable("refresh daily_usage_cost"); err != nil {
		return err
	}
	return s.inTx(ctx, func(conn *sql.Conn) error {
		if err := refreshAllDayCost(ctx, conn, from, to); err != nil {
			return err
		}
		return refreshBaselines(ctx, conn, "", from, to)
	})
}
