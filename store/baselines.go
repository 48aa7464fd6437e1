package store

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"
)

// anomalyBaselinesVersion is the migration that creates daily_baselines.
const anomalyBaselinesVersion = 14

// baselineWindow is how many days after a changed day have a baseline that
// reads it: the anomalies view's 28 trailing days.
const baselineWindow = 28

// refreshBaselines rewrites daily_baselines for organization org ("" for
// every organization) for the days whose cost or baseline reads
// daily_usage_cost's days [from, to): those days and the 28 after them. It
// runs on conn, in the transaction that rewrote those days.
func refreshBaselines(ctx context.Context, conn *sql.Conn, org string, from, to time.Time) error {
	lo, hi := from.AddDate(0, 0, -baselineWindow), to.AddDate(0, 0, baselineWindow+1)
	if from.Before(farPast) {
		lo, from = farPast, farPast
	}
	if to.After(farFuture.AddDate(-1, 0, 0)) {
		hi = farFuture
	}
	orgArg := any(nil)
	if org != "" {
		orgArg = org
	}
	if _, err := conn.ExecContext(ctx, `DELETE FROM daily_baselines WHERE ($1::VARCHAR IS NULL OR organization = $1) AND day >= CAST($2 AS DATE) AND day < CAST($3 AS DATE)`,
		orgArg, from, hi); err != nil {
		return fmt.Errorf("refresh daily_baselines: %w", err)
	}
	if _, err := conn.ExecContext(ctx, `INSERT INTO daily_baselines (organization, day, project, meter_name, currency, cost, baseline, baseline_days)
`+baselinesQuery+`
QUALIFY day >= CAST($4 AS DATE) AND day < CAST($3 AS DATE)`, orgArg, lo, hi, from); err != nil {
		return fmt.Errorf("refresh daily_baselines: %w", err)
	}
	return nil
}

// baselinesQuery is the anomalies view's scored rows (its daily and scored
// steps) over daily_usage_cost's days [$2, $3) of organization $1 (NULL for
// every one): exactly the view's, for every day at least 28 days after $2.
const baselinesQuery = `SELECT organization, day, project, meter_name, currency, cost,
       median(cost) OVER w AS baseline,
       count(*) OVER w AS baseline_days
FROM (SELECT organization, day, coalesce(project, '') AS project, meter_name, currency, sum(cost) AS cost
      FROM daily_usage_cost
      WHERE ($1::VARCHAR IS NULL OR organization = $1) AND day >= CAST($2 AS DATE) AND day < CAST($3 AS DATE)
      GROUP BY ALL)
WINDOW w AS (PARTITION BY organization, project, meter_name, currency ORDER BY day
             RANGE BETWEEN INTERVAL 28 DAYS PRECEDING AND INTERVAL 1 DAY PRECEDING)`

// farPast bounds the days of a refresh of everything.
var farPast = time.Date(1900, 1, 1, 0, 0, 0, 0, time.UTC)

// anomaliesScored is the scored step of sql/views/anomalies.sql, which
// the database's anomalies reads from daily_baselines instead
// (anomaliesView).
const anomaliesScored = `scored AS (
    SELECT d.*,
           median(d.cost) OVER w AS baseline,
           count(*) OVER w AS baseline_days
    FROM daily d
    WINDOW w AS (PARTITION BY organization, project, meter_name, currency ORDER BY day
                 RANGE BETWEEN INTERVAL 28 DAYS PRECEDING AND INTERVAL 1 DAY PRECEDING)
),`

// anomaliesView is the database's anomalies: the file's definition with
// its baselines read from the kept table, so a query costs the candidate
// days, not a sliding median over every day kept. The workbook and the
// alert checks inline the file's definition over the days they read.
func anomaliesView(file string) (string, error) {
	if !strings.Contains(file, anomaliesScored) {
		return "", fmt.Errorf("create view anomalies: sql/views/anomalies.sql no longer has the scored step daily_baselines keeps; update store/baselines.go with it")
	}
	return strings.Replace(file, anomaliesScored, `scored AS (
    SELECT organization, day, project, meter_name, currency, cost, baseline, baseline_days
    FROM daily_baselines
),`, 1), nil
}
