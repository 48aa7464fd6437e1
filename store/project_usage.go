package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/tally-dev/tally"
)

// EstimatedScope is the ledger scope of one project's estimated rows.
func EstimatedScope(project string) string { return "projects=" + project }

// SaveProjectUsage keeps one read of each project's usage report as a
// snapshot taken at at, and rebuilds those projects' estimated usage rows
// (basis estimated, granularity day) of the months the reports cover: the
// differences between consecutive snapshots, priced from the rate card in
// force for the project's payment method (rate_card_matches). A row no
// single price matches keeps a NULL cost. The ledger gets one window per
// project and month, from the month's first day to the day after the
// latest snapshot, so the views and the workbook count the rows. All of
// it is one transaction, stored under organization org, from its own
// snapshots: two organizations' projects of one name never mix.
func (s *Store) SaveProjectUsage(ctx context.Context, org string, runID uuid.UUID, at time.Time, reads []tally.ProjectUsage) (int64, error) {
	if err := s.writable("save project usage"); err != nil {
		return 0, err
	}
	at = at.UTC().Truncate(time.Microsecond)
	// The keys of the rebuilt months may fall in a closed month
	// (keysInClosedMonths): one at a time with the loads that may.
	s.closeKeysMu.Lock()
	defer s.closeKeysMu.Unlock()
	var rows int64
	err := s.inTx(ctx, func(conn *sql.Conn) error {
		months := map[time.Time]bool{} // whose estimated rows were rebuilt
		for _, pu := range reads {
			for _, m := range pu.Meters {
				if _, err := conn.ExecContext(ctx, `INSERT INTO project_usage_snapshots
(taken_at, run_id, project, period_start, period_end, meter_name, unit, solution, family, quantity, organization)
VALUES (?, ?::UUID, ?, ?::DATE, ?::DATE, ?, ?, ?, ?, CAST(? AS DECIMAL(38, 12)), ?)`,
					at, runID.String(), pu.Project, pu.Start, pu.End, m.MeterName, textOrNull(m.Unit), textOrNull(m.Solution), textOrNull(m.Family), m.Quantity.String(), org); err != nil {
					return fmt.Errorf("save usage of project %s: %w", pu.Project, err)
				}
			}
			month := time.Date(pu.Start.Year(), pu.Start.Month(), 1, 0, 0, 0, 0, time.UTC)
			next := month.AddDate(0, 1, 0)
			if _, err := conn.ExecContext(ctx, `DELETE FROM usage WHERE organization = ? AND basis = 'estimated' AND project = ? AND date >= ? AND date < ?`, org, pu.Project, month, next); err != nil {
				return fmt.Errorf("rebuild estimated usage of project %s: %w", pu.Project, err)
			}
			res, err := conn.ExecContext(ctx, estimateRows, org, runID.String(), at, org, pu.Project, month)
			if err != nil {
				return fmt.Errorf("rebuild estimated usage of project %s: %w", pu.Project, err)
			}
			n, _ := res.RowsAffected()
			rows += n
			months[month] = true
			// Covered: up to the day of this read (the report's end may
			// name tomorrow), never past the month.
			end := at.Truncate(24*time.Hour).AddDate(0, 0, 1)
			for _, t := range []time.Time{pu.End, next} {
				if t.Before(end) {
					end = t
				}
			}
			scope := EstimatedScope(pu.Project)
			if _, err := conn.ExecContext(ctx, `DELETE FROM fetch_windows WHERE organization = ? AND basis = 'estimated' AND scope = ? AND start = ?::DATE`, org, scope, month); err != nil {
				return fmt.Errorf("update ledger: %w", err)
			}
			if _, err := conn.ExecContext(ctx, `INSERT INTO fetch_windows (organization, granularity, basis, scope, start, "end", rows, run_id, fetched_at)
VALUES (?, 'day', 'estimated', ?, ?::DATE, ?::DATE, ?, ?::UUID, ?)`, org, scope, month, end, n, runID.String(), at); err != nil {
				return fmt.Errorf("update ledger: %w", err)
			}
		}
		// The rows' usage keys, as a load numbers its rows, and the totals
		// kept from the rows (summed per key, as a load's), once a month
		// for every project read.
		if err := noteChanges(ctx, conn, org, months); err != nil {
			return err
		}
		for month := range months {
			if s.keyed {
				if err := s.keyMonth(ctx, conn, org, month); err != nil {
					return fmt.Errorf("rebuild estimated usage: %w", err)
				}
			}
			if err := refreshDayTotals(ctx, conn, org, tally.Day, "estimated", month, month.AddDate(0, 1, 0), s.keyed); err != nil {
				return fmt.Errorf("rebuild estimated usage: %w", err)
			}
		}
		return nil
	})
	if err == nil {
		s.stampChanges(ctx)
	}
	return rows, err
}

// estimateRows prices one project's month of project_usage_days into
// usage rows, from the organization's own snapshots (its projects, its
// payment methods and rate cards). Parameters: organization, run id,
// fetched at, organization, project, month.
const estimateRows = `INSERT INTO usage (organization, granularity, basis, date, date_processed, meter_name, meter_sku, family, solution, unit,
    quantity, price, cost, currency, entitlement, entitlement_type, payment_method, payment_method_name, project, run_id, fetched_at)
SELECT ?, 'day', 'estimated', CAST(d.day AS TIMESTAMP), NULL, d.meter_name, k.meter_sku, d.family, d.solution, d.unit,
       CAST(d.quantity AS DOUBLE),
       CAST(m.price AS DOUBLE),
       CAST(d.quantity * m.price AS DECIMAL(38, 12)),
       coalesce(m.currency, (SELECT any_value(r.currency) FROM rate_card_price_snapshots r
                              JOIN snapshots_in_force cr ON cr.kind = 'rate_card' AND cr.organization = d.organization AND cr.month = d.month AND cr.key = r.payment_method_id
                              WHERE r.organization = d.organization AND r.payment_method_id = p.assigned_payment_method_id AND r.snapshot_at = cr.snapshot_at), ''),
       NULL, NULL,
       nullif(p.assigned_payment_method_id, ''), pm.display_name, d.project, ?::UUID, ?
FROM project_usage_days d
LEFT JOIN snapshots_in_force cp ON cp.kind = 'project' AND cp.organization = d.organization AND cp.month = d.month AND cp.key = d.project
LEFT JOIN project_snapshots p ON p.organization = d.organization AND p.name = d.project AND p.snapshot_at = cp.snapshot_at
LEFT JOIN meter_skus k ON k.meter_name = d.meter_name
LEFT JOIN rate_card_matches m ON m.organization = d.organization AND m.month = d.month AND m.payment_method_id = p.assigned_payment_method_id
      AND m.meter_name = d.meter_name AND coalesce(m.meter_sku, '') = coalesce(k.meter_sku, '')
LEFT JOIN snapshots_in_force cm ON cm.kind = 'payment_method' AND cm.organization = d.organization AND cm.month = d.month AND cm.key = p.assigned_payment_method_id
LEFT JOIN payment_method_snapshots pm ON pm.organization = d.organization AND pm.id = p.assigned_payment_method_id AND pm.snapshot_at = cm.snapshot_at
WHERE d.organization = ? AND d.project = ? AND d.month = ?`

// FirstProjectSnapshot is when the per-project report was first read, nil
// before: months before it cannot be told.
func (s *Store) FirstProjectSnapshot(ctx context.Context) (*time.Time, error) {
	var t sql.NullTime
	if err := s.db.QueryRowContext(ctx, `SELECT min(taken_at) FROM project_usage_snapshots`).Scan(&t); err != nil {
		return nil, fmt.Errorf("read project usage snapshots: %w", err)
	}
	if !t.Valid {
		return nil, nil
	}
	u := t.Time.UTC()
	return &u, nil
}
