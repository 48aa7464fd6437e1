package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/tally-dev/tally"
	tallysql "github.com/tally-dev/tally/sql"
)

// dayTotalsVersion is the migration that creates daily_usage_totals.
const dayTotalsVersion = 11

// dayTotalsDetailVersion is the migration that adds the columns
// payment_method_violations and meter_daily_cost read; the table is filled
// as it is applied (see migrate), the last of the two a store lacks.
const dayTotalsDetailVersion = 13

// dayTotalsColumns are daily_usage_totals' columns, in the order
// usage_day_totals gives them.
const dayTotalsColumns = `organization, basis, granularity, month, next_month, day, date_month, processed_month, project, payment_method,
meter_name, meter_sku, currency, paid_as, payment_method_name, rows, quantity, cost,
date_day, unit, family, first_at, last_at, streaming_cost`

// dayTotalsView is usage_day_totals as the database defines it: the table
// the load keeps, whose month is a stored column. sql/views/usage_day_totals.sql,
// which the workbook inlines, defines the same rows from usage.
const dayTotalsView = `SELECT ` + dayTotalsColumns + ` FROM daily_usage_totals`

// meterMonthsView is meter_months as the database defines it: the months
// of date and of date_processed daily_usage_totals holds for every loaded
// row (all of which have a period_at), not a pass over usage_meter_days'
// two rows per usage row.
const meterMonthsView = `SELECT organization, date_month AS month, payment_method, meter_name, coalesce(meter_sku, '') AS sku_key
FROM daily_usage_totals
UNION
SELECT organization, processed_month, payment_method, meter_name, coalesce(meter_sku, '')
FROM daily_usage_totals
WHERE processed_month IS NOT NULL`

// meterSkusView is meter_skus as the database defines it, from
// daily_usage_totals: the least sku of each meter's rows is the least of
// its days'.
const meterSkusView = `SELECT meter_name, min(meter_sku) AS meter_sku
FROM daily_usage_totals
WHERE basis <> 'estimated' AND nullif(meter_sku, '') IS NOT NULL
GROUP BY meter_name`

// allocationChargesView is allocation_charges as the database defines it:
// usage_finest's rows summed from their daily totals, whose month is
// stored, rather than row by row. sql/views/allocation_charges.sql, which
// the workbook's Chargeback sheet inlines over the report month's rows in
// place of usage_finest, defines the same rows from usage_finest.
const allocationChargesView = `SELECT {'organization': organization, 'basis': basis, 'month': month} AS period,
       organization, basis, month, currency, project, meter_name, family, payment_method, paid_as,
       sum(cost) AS cost,
       sum(quantity) AS quantity
FROM usage_finest_days
GROUP BY ALL`

// dayTotalsWhere keeps, for tallysql.InlineWhere, the usage rows of one
// granularity and basis whose period_at falls on the days
// [$days_from, $days_to): on the usage table's own columns, which DuckDB
// takes to the table's scan. period_at is date_processed for basis
// reported and date otherwise (usage_rows).
func dayTotalsWhere(basis string) map[string]string {
	// And of one organization ($org): organizations load the same days
	// side by side, each rewriting its own totals.
	col := "date"
	if basis == string(tally.BasisReported) {
		col = "date_processed"
	}
	return map[string]string{"usage": "organization = $org AND granularity = $granularity AND basis = $basis AND " +
		col + " >= CAST($days_from AS TIMESTAMP) AND " + col + " < CAST($days_to AS TIMESTAMP)"}
}

// refreshDayTotals replaces daily_usage_totals' rows of granularity g and
// basis on the days [from, to) with those usage_day_totals gives for them
// now, on conn (inside the caller's transaction). A load changes only the
// usage rows of its granularity and basis whose period_at lies in its
// window, so these are the only totals it can change; which granularity
// counts for a day (usage_coverage) is decided when the totals are read.
// byKey: every one of those rows has its key (a load's, in a store with
// keys), so they are summed per key (dayTotalsByKey).
func refreshDayTotals(ctx context.Context, conn *sql.Conn, org string, g tally.Granularity, basis string, from, to time.Time, byKey bool) error {
	query := `INSERT INTO daily_usage_totals
SELECT ` + dayTotalsColumns + ` FROM usage_day_totals ORDER BY day`
	if byKey {
		query = dayTotalsByKey
	}
	// usage_day_totals as its file defines it, from the usage rows under
	// dayTotalsWhere, which must reach usage's scan under the views
	// between: the database's own is the table being rewritten.
	q, err := tallysql.InlineWhere(query, dayTotalsWhere(basis))
	if err != nil {
		return err
	}
	// Hours eight days at a time, in day order: a statement holds the sums of
	// its days until it writes them, and a month of 4,000,000 hourly rows
	// summed at once (240,000 totals) needed more than the writer's
	// 160 MB. Coarser rows are a 24th as many a day or fewer.
	step := to.Sub(from)
	if g == tally.Hour {
		step = totalsHoursStep
	}
	for lo := from; lo.Before(to); lo = lo.Add(step) {
		hi := minTime(lo.Add(step), to)
		if _, err := conn.ExecContext(ctx, `DELETE FROM daily_usage_totals
WHERE organization = $5 AND granularity = $1 AND basis = $2 AND day >= CAST($3 AS DATE) AND day < CAST($4 AS DATE)`, string(g), basis, lo, hi, org); err != nil {
			return fmt.Errorf("refresh daily_usage_totals: %w", err)
		}
		if _, err := conn.ExecContext(ctx, q, sql.Named("org", org), sql.Named("granularity", string(g)), sql.Named("basis", basis),
			sql.Named("days_from", lo), sql.Named("days_to", hi)); err != nil {
			return fmt.Errorf("refresh daily_usage_totals: %w", err)
		}
	}
	return nil
}

// dayTotalsByKey is usage_day_totals' rows summed in two steps: the usage
// rows per key and day (integers and dates: a key numbers every text of
// its rows, usagekeys.go), then those sums per day and texts, joined to
// their keys. Grouping the rows on their eleven texts instead was most of
// the load's daily sums (at 5,000,000 rows, 3.7 of the fetch's 45 CPU
// seconds) and of its memory beyond the insert. Its columns and sums are
// usage_day_totals' (sql/views/usage_day_totals.sql): a sum of sums is the
// same exact DECIMAL sum, NULL only where every row's is; the least name
// of the least names is the least; paid_as is usage_rows' rule, the macro
// paid_as_of, applied to each key's texts.
// TestDayTotalsKeptByTheLoad compares the two after every kind of write.
const dayTotalsByKey = `INSERT INTO daily_usage_totals (` + dayTotalsColumns + `)
SELECT k.organization, k.basis, k.granularity,
       CAST(date_trunc('month', g.day) AS DATE) AS month,
       CAST(date_trunc('month', g.day) + INTERVAL 1 MONTH AS DATE) AS next_month,
       g.day,
       CAST(k.month AS DATE) AS date_month,
       g.processed_month,
       k.project, k.payment_method, k.meter_name, k.meter_sku, k.currency, k.paid_as,
       min(nullif(k.payment_method_name, '')) AS payment_method_name,
       sum(g.rows) AS rows,
       sum(g.quantity) AS quantity,
       sum(g.cost) AS cost,
       g.date_day, k.unit, k.family,
       min(g.first_at) AS first_at,
       max(g.last_at) AS last_at,
       sum(g.cost) FILTER (WHERE lower(k.solution) = 'streaming') AS streaming_cost
FROM (SELECT key_id,
             CAST(period_at AS DATE) AS day,
             CAST(date AS DATE) AS date_day,
             CAST(date_trunc('month', date_processed) AS DATE) AS processed_month,
             count(*) AS rows,
             sum(CAST(quantity AS DECIMAL(38, 12))) AS quantity,
             sum(cost) AS cost,
             min(date) AS first_at,
             max(date) AS last_at
      FROM usage_rows
      WHERE period_at IS NOT NULL
      GROUP BY ALL) g
JOIN (SELECT *, paid_as_of(entitlement_type, entitlement) AS paid_as FROM usage_keys) k ON k.id = g.key_id
GROUP BY ALL
ORDER BY day`

// totalsHoursStep is how many days of hourly usage one statement sums
// into daily_usage_totals.
const totalsHoursStep = 8 * 24 * time.Hour

// RefreshDayTotals recomputes daily_usage_totals from every usage row, a
// month at a time (see RefillKept). Tally's loads keep it themselves; this
// is for usage written by other means.
func (s *Store) RefreshDayTotals(ctx context.Context) error {
	if err := s.writable("refresh daily_usage_totals"); err != nil {
		return err
	}
	if err := s.inTx(ctx, func(conn *sql.Conn) error { return markRefill(ctx, conn, keptTotals) }); err != nil {
		return err
	}
	return s.finishRefills(ctx)
}
