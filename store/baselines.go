package store

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	tallysql "github.com/tally-dev/tally/sql"
)

// anomalyBaselinesVersion is the migration that creates daily_baselines.
const anomalyBaselinesVersion = 14

// baselineWindow is how many days after a changed day have a baseline that
// reads it: the anomalies view's 28 trailing days.
const baselineWindow = 28

// settleBaselines rewrites the baselines of every range baseline_dirty
// lists, and removes them, in one transaction. One at a time (baselineMu):
// the last to run sees every load committed before it, so the baselines
// end as the committed days say, whatever order loads side by side commit
// in.
func (s *Store) settleBaselines(ctx context.Context) error {
	s.baselineMu.Lock()
	defer s.baselineMu.Unlock()
	return s.inTx(ctx, func(conn *sql.Conn) error {
		var n int
		if err := conn.QueryRowContext(ctx, `SELECT count(*) FROM duckdb_tables() WHERE database_name = current_database() AND schema_name = 'main' AND table_name = 'baseline_dirty'`).Scan(&n); err != nil || n == 0 {
			return err // a store an older migration set made (tests): nothing kept yet
		}
		rows, err := conn.QueryContext(ctx, `SELECT rowid, organization, from_day, to_day FROM baseline_dirty ORDER BY rowid`)
		if err != nil {
			return fmt.Errorf("read baseline_dirty: %w", err)
		}
		type dirty struct {
			id       int64
			org      string
			from, to time.Time
		}
		var ds []dirty
		for rows.Next() {
			var d dirty
			if err := rows.Scan(&d.id, &d.org, &d.from, &d.to); err != nil {
				rows.Close()
				return fmt.Errorf("read baseline_dirty: %w", err)
			}
			ds = append(ds, d)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return fmt.Errorf("read baseline_dirty: %w", err)
		}
		for _, d := range ds {
			if err := refreshBaselines(ctx, conn, d.org, d.from.UTC(), d.to.UTC()); err != nil {
				return err
			}
			if _, err := conn.ExecContext(ctx, `DELETE FROM baseline_dirty WHERE rowid = ?`, d.id); err != nil {
				return fmt.Errorf("settle baselines: %w", err)
			}
		}
		return nil
	})
}

// refreshBaselines rewrites daily_baselines for organization org ("" for
// every organization) for the days whose cost or baseline reads
// daily_usage_cost's days [from, to): those days and the 28 after them. It
// runs on conn, in a transaction that sees those days as committed.
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

// anomaliesDaily is the daily step of sql/views/anomalies.sql, whose rows
// daily_baselines also holds (its cost column, for every day).
const anomaliesDaily = `daily AS (
    SELECT organization, day, coalesce(project, '') AS project, meter_name, currency, sum(cost) AS cost
    FROM usage_day_cost
    GROUP BY ALL
),`

// anomaliesView is the database's anomalies: the file's definition with
// its days and baselines read from the kept table, so a query costs the
// candidate days, not a sliding median over every day kept nor a sum of
// every day's cost (for the few candidates' spread). The workbook and the
// alert checks inline the file's definition over the days they read.
func anomaliesView(file string) (string, error) {
	if !strings.Contains(file, anomaliesScored) || !strings.Contains(file, anomaliesDaily) {
		return "", fmt.Errorf("create view anomalies: sql/views/anomalies.sql no longer has the daily and scored steps daily_baselines keeps; update store/baselines.go with them")
	}
	file = strings.Replace(file, anomaliesDaily, `daily AS (
    SELECT organization, day, project, meter_name, currency, cost
    FROM daily_baselines
),`, 1)
	return strings.Replace(file, anomaliesScored, `scored AS (
    SELECT organization, day, project, meter_name, currency, cost, baseline, baseline_days
    FROM daily_baselines
),`, 1), nil
}

// keptAnomalies is anomaliesView's query with daily_baselines read for the
// days [$days_from, $days_to) only: the anomalies of a day read its 28
// days before, so asked from $days_from + 28 on, it gives exactly the
// rows of the file's definition over usage_day_cost's days.
func keptAnomalies(org bool) (string, error) {
	v, err := tallysql.View("anomalies")
	if err != nil {
		return "", err
	}
	q, err := anomaliesView(v.Query)
	if err != nil {
		return "", err
	}
	return strings.ReplaceAll(q, "FROM daily_baselines\n", "FROM daily_baselines\n    WHERE "+keptDays(org)+"\n"), nil
}

// keptDays is the condition on a kept table's day (and organization, for
// one organization's figures: $org) that DayCostDays and keptAnomalies
// read under.
func keptDays(org bool) string {
	c := "day >= CAST($days_from AS DATE) AND day < CAST($days_to AS DATE)"
	if org {
		c += " AND organization = $org"
	}
	return c
}

// BaselinesKept reports whether q's database holds every day's anomaly
// baseline in daily_baselines: the day cost is kept (DayCostKept), no
// migration left the baselines to fill, and no load's days wait in
// baseline_dirty for theirs to be rewritten.
func BaselinesKept(ctx context.Context, q Querier) (bool, error) {
	kept, err := DayCostKept(ctx, q)
	if err != nil || !kept {
		return false, err
	}
	var n int
	if err := scanOne(ctx, q, `SELECT count(*) FROM duckdb_tables()
WHERE database_name = current_database() AND schema_name = 'main' AND table_name IN ('daily_baselines', 'baseline_dirty')`, nil, &n); err != nil || n < 2 {
		return false, err
	}
	if err := scanOne(ctx, q, `SELECT (SELECT count(*) FROM baseline_dirty) + (SELECT count(*) FROM kept_refills WHERE kept = 'daily_baselines')`, nil, &n); err != nil {
		return false, err
	}
	return n == 0, nil
}

// AnomaliesDefs is what tallysql.InlineDefined reads for anomalies over
// the days [$days_from, $days_to) where the store keeps the baselines
// (BaselinesKept): the kept table instead of a sliding median over the
// days' cost (1.8 s of CPU at 100 million rows for a week's anomalies).
// With org, one organization's ($org).
func AnomaliesDefs(org bool) (map[string]string, error) {
	q, err := keptAnomalies(org)
	if err != nil {
		return nil, err
	}
	return map[string]string{"usage_day_cost": DayCostDefs(org), "anomalies": q}, nil
}
