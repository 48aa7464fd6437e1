package store

import (
	"context"
	"database/sql"
	"fmt"
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
	// anomaly_baselines as its file defines it, over the days being
	// rewritten (baselineDays for usage_day_cost): the database's own is
	// the table being rewritten. The view's SQL stays in its file.
	q, err := tallysql.InlineDefined(`SELECT organization, day, project, meter_name, currency, cost, baseline, baseline_days FROM anomaly_baselines
WHERE day >= CAST($4 AS DATE) AND day < CAST($3 AS DATE)`, nil, map[string]string{"usage_day_cost": baselineDays})
	if err != nil {
		return fmt.Errorf("refresh daily_baselines: %w", err)
	}
	if _, err := conn.ExecContext(ctx, `INSERT INTO daily_baselines (organization, day, project, meter_name, currency, cost, baseline, baseline_days)
`+q, orgArg, lo, hi, from); err != nil {
		return fmt.Errorf("refresh daily_baselines: %w", err)
	}
	return nil
}

// baselineDays is usage_day_cost for a rewrite of daily_baselines:
// daily_usage_cost's days [$2, $3) of organization $1 (NULL for every
// one). The anomaly_baselines view over them gives exactly the view's rows
// for every day at least 28 days after $2.
const baselineDays = `SELECT organization, day, project, payment_method, family, meter_name, currency, cost
FROM daily_usage_cost
WHERE ($1::VARCHAR IS NULL OR organization = $1) AND day >= CAST($2 AS DATE) AND day < CAST($3 AS DATE)`

// farPast bounds the days of a refresh of everything.
var farPast = time.Date(1900, 1, 1, 0, 0, 0, 0, time.UTC)

// baselinesView is anomaly_baselines as the database defines it: the
// table the load keeps (sql/views/anomaly_baselines.sql defines the same
// rows from usage_day_cost).
const baselinesView = `SELECT organization, day, project, meter_name, currency, cost, baseline, baseline_days FROM daily_baselines`

// keptDays is the condition on a kept table's day (and organization, for
// one organization's figures: $org) that DayCostDays and AnomaliesDefs
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
	if err := ScanOne(ctx, q, `SELECT count(*) FROM duckdb_tables()
WHERE database_name = current_database() AND schema_name = 'main' AND table_name IN ('daily_baselines', 'baseline_dirty')`, nil, &n); err != nil || n < 2 {
		return false, err
	}
	if err := ScanOne(ctx, q, `SELECT (SELECT count(*) FROM baseline_dirty) + (SELECT count(*) FROM kept_refills WHERE kept = 'daily_baselines')`, nil, &n); err != nil {
		return false, err
	}
	return n == 0, nil
}

// AnomaliesDefs is what tallysql.InlineDefined reads for anomalies over
// the days [$days_from, $days_to) where the store keeps the baselines
// (BaselinesKept): anomaly_baselines from the kept table instead of a
// sliding median over the days' cost (1.8 s of CPU at 100 million rows for
// a week's anomalies). The anomalies of a day read its 28 days before, so
// asked from $days_from + 28 on, they are exactly the rows of the views'
// files over usage_day_cost's days. With org, one organization's ($org).
func AnomaliesDefs(org bool) map[string]string {
	return map[string]string{"usage_day_cost": DayCostDefs(org), "anomaly_baselines": baselinesView + "\nWHERE " + keptDays(org)}
}
