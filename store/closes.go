package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/tally-dev/tally"
)

// Actions of month_closes.
const (
	ActionClose  = "close"
	ActionReopen = "reopen"
)

// MonthClose is one row of month_closes: a month closed or reopened.
type MonthClose struct {
	ID uuid.UUID // the run that did it; a group close's rows of each organization have their own
	// Organization is the organization closed or reopened alone; "" for
	// every organization of the store at once (the api: form's one, or
	// a group's).
	Organization  string
	Month         time.Time // 1st of the month, UTC
	Basis         tally.Basis
	Granularity   tally.Granularity
	Action        string // ActionClose or ActionReopen
	At            time.Time
	Who           string
	Reason        string
	ContentHash   string // close only
	FinalWorkbook string // close only
	FinalSHA256   string // close only: the final workbook's bytes; "" for closes before migration 0009
	// Allocation is, on a close, the chargeback the month closes under:
	// its cost centres and the rules in force for it, frozen with the
	// close (allocation_rules rows under its id); empty for none.
	Allocation tally.Allocation
	// Statements are, on a close, the chargeback statements it wrote,
	// recorded with it (month_close_statements).
	Statements []CloseStatement
}

// CloseStatement is one cost centre's final statement of a close.
type CloseStatement struct {
	CostCentre, Owner, Path, SHA256 string
}

// CloseStatements returns the statements of the close id, by cost
// centre; with uuid.Nil, those of every close.
func (s *Store) CloseStatements(ctx context.Context, id uuid.UUID) ([]CloseStatement, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT cost_centre, coalesce(owner, ''), path, sha256 FROM month_close_statements
WHERE ? OR close_id = ? ORDER BY cost_centre, path`, id == uuid.Nil, id)
	if err != nil {
		return nil, fmt.Errorf("read month_close_statements: %w", err)
	}
	defer rows.Close()
	var out []CloseStatement
	for rows.Next() {
		var st CloseStatement
		if err := rows.Scan(&st.CostCentre, &st.Owner, &st.Path, &st.SHA256); err != nil {
			return nil, fmt.Errorf("read month_close_statements: %w", err)
		}
		out = append(out, st)
	}
	return out, rows.Err()
}

// LatestClose returns the latest month_closes row in force for an
// organization's month, basis and granularity (its own, or one of every
// organization at once; at a tie its own, as closed_months), or nil when
// the month was never closed. With org "", the latest close or reopen of
// every organization at once.
func (s *Store) LatestClose(ctx context.Context, org string, month time.Time, basis tally.Basis, g tally.Granularity) (*MonthClose, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT `+closeColumns+`
FROM month_closes WHERE month = ? AND basis = ? AND granularity = ? AND (organization IS NULL OR organization = ?)
ORDER BY acted_at DESC, organization IS NULL, id DESC LIMIT 1`, month, string(basis), string(g), textOrNull(org))
	if err != nil {
		return nil, fmt.Errorf("read month_closes: %w", err)
	}
	cs, err := scanCloses(rows)
	if err != nil || len(cs) == 0 {
		return nil, err
	}
	return &cs[0], nil
}

// closeColumns are the month_closes columns scanCloses reads, in order.
const closeColumns = `id, coalesce(organization, ''), month, basis, granularity, action, acted_at, who, reason, content_hash, final_workbook, final_sha256`

func scanCloses(rows *sql.Rows) ([]MonthClose, error) {
	defer rows.Close()
	var out []MonthClose
	for rows.Next() {
		var c MonthClose
		var basis, g string
		var reason, hash, wb, sum sql.NullString
		if err := rows.Scan(&c.ID, &c.Organization, &c.Month, &basis, &g, &c.Action, &c.At, &c.Who, &reason, &hash, &wb, &sum); err != nil {
			return nil, fmt.Errorf("read month_closes: %w", err)
		}
		c.Basis, c.Granularity = tally.Basis(basis), tally.Granularity(g)
		c.Month, c.At = c.Month.UTC(), c.At.UTC()
		c.Reason, c.ContentHash, c.FinalWorkbook, c.FinalSHA256 = reason.String, hash.String, wb.String, sum.String
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read month_closes: %w", err)
	}
	return out, nil
}

// Closes returns every close (not reopen) ever recorded, oldest first: the
// final workbooks a close wrote, current or superseded.
func (s *Store) Closes(ctx context.Context) ([]MonthClose, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT `+closeColumns+` FROM month_closes WHERE action = 'close' ORDER BY acted_at, id`)
	if err != nil {
		return nil, fmt.Errorf("read month_closes: %w", err)
	}
	return scanCloses(rows)
}

// CurrentCloses returns the closes in force now, oldest month first: per
// month, basis and granularity, the latest close of every organization at
// once, and each organization's own latest close, unless a later row
// (its own, or a reopen of every organization) reopened it.
func (s *Store) CurrentCloses(ctx context.Context) ([]MonthClose, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT `+closeColumns+` FROM month_closes mc
WHERE action = 'close' AND NOT EXISTS (
    SELECT 1 FROM month_closes later
    WHERE later.month = mc.month AND later.basis = mc.basis AND later.granularity = mc.granularity
      AND ((later.organization IS NOT DISTINCT FROM mc.organization AND (later.acted_at, later.id) > (mc.acted_at, mc.id))
        OR (mc.organization IS NOT NULL AND later.organization IS NULL AND later.acted_at > mc.acted_at)))
ORDER BY month, basis, granularity, organization NULLS FIRST`)
	if err != nil {
		return nil, fmt.Errorf("read month_closes: %w", err)
	}
	return scanCloses(rows)
}

// CloseCount is how many times a month was closed (for the organization,
// "" for every organization at once, the basis and granularity) so far:
// a new close is the next in that sequence, and its final workbook's name
// says so.
func (s *Store) CloseCount(ctx context.Context, org string, month time.Time, basis tally.Basis, g tally.Granularity) (int, error) {
	var n int
	if err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM month_closes WHERE month = ? AND basis = ? AND granularity = ? AND action = 'close'
AND organization IS NOT DISTINCT FROM ?`,
		month, string(basis), string(g), textOrNull(org)).Scan(&n); err != nil {
		return 0, fmt.Errorf("read month_closes: %w", err)
	}
	return n, nil
}

// RecordClose adds a close and its figures in one transaction. The
// fingerprint's row count and cost per currency are summed from the
// figures, in DuckDB, so they are exact and agree with them by
// construction.
func (s *Store) RecordClose(ctx context.Context, c MonthClose, figs []tally.CloseFigure) error {
	return s.RecordCloses(ctx, []CloseRecord{{Close: c, Figures: figs}})
}

// CloseRecord is one close to record and its figures.
type CloseRecord struct {
	Close   MonthClose
	Figures []tally.CloseFigure
}

// RecordCloses adds closes in one transaction: a group's close of every
// organization at once is all recorded, or none.
func (s *Store) RecordCloses(ctx context.Context, cs []CloseRecord) error {
	return s.inTx(ctx, func(conn *sql.Conn) error {
		for _, r := range cs {
			if err := recordClose(ctx, conn, r.Close, r.Figures); err != nil {
				return err
			}
		}
		if !s.closeKeyed {
			return nil
		}
		for _, r := range cs {
			c := r.Close
			if err := KeepCloseKeys(ctx, conn, c.Organization, c.Month, c.Basis, c.Granularity); err != nil {
				return err
			}
		}
		return nil
	})
}

// FreezeAllocation writes, on conn in a close's transaction, the
// chargeback the close freezes (a's cost centres and rules, under the
// close's id). Package allocation, which owns those records
// (allocation_cost_centres, allocation_rules), sets it; a close with an
// allocation is refused when it is not set.
var FreezeAllocation func(ctx context.Context, conn *sql.Conn, closeID uuid.UUID, a tally.Allocation) error

func recordClose(ctx context.Context, conn *sql.Conn, c MonthClose, figs []tally.CloseFigure) error {
	for _, f := range figs {
		if _, err := conn.ExecContext(ctx, `INSERT INTO month_close_figures
(close_id, organization, project, meter_name, payment_method, currency, rows, cost, billed, effective, quantity, unit)
VALUES (?, ?, ?, ?, ?, ?, ?, CAST(? AS DECIMAL(38, 12)), CAST(? AS DECIMAL(38, 12)), CAST(? AS DECIMAL(38, 12)), CAST(? AS DECIMAL(38, 12)), ?)`,
			c.ID, f.Organization, textOrNull(f.Project), f.MeterName, textOrNull(f.PaymentMethod), f.Currency, f.Rows, f.Cost, f.Billed, f.Effective, f.Quantity, textOrNull(f.Unit)); err != nil {
			return fmt.Errorf("record close figures: %w", err)
		}
	}
	for _, st := range c.Statements {
		if _, err := conn.ExecContext(ctx, `INSERT INTO month_close_statements (close_id, cost_centre, owner, path, sha256) VALUES (?, ?, ?, ?, ?)`,
			c.ID, st.CostCentre, textOrNull(st.Owner), st.Path, st.SHA256); err != nil {
			return fmt.Errorf("record close statements: %w", err)
		}
	}
	var allocationHash any
	if !c.Allocation.Empty() {
		if FreezeAllocation == nil {
			return errors.New("record close: no writer for the chargeback it freezes (package allocation is not in the build)")
		}
		frozen := tally.Allocation{CostCentres: c.Allocation.CostCentres, Rules: c.Allocation.InForce(c.Month)}
		if err := FreezeAllocation(ctx, conn, c.ID, frozen); err != nil {
			return err
		}
		allocationHash = c.Allocation.Hash(c.Month)
	}
	// Columns named: migrations add columns to month_closes.
	_, err := conn.ExecContext(ctx, `INSERT INTO month_closes
    (id, organization, month, basis, granularity, action, acted_at, who, reason, rows, cost, content_hash, final_workbook, final_sha256, allocation_hash)
SELECT ?, ?, ?, ?, ?, 'close', ?, ?, ?,
       (SELECT coalesce(sum(rows), 0) FROM month_close_figures WHERE close_id = ?),
       (SELECT map(coalesce(list(currency ORDER BY currency), []), coalesce(list(total ORDER BY currency), []))
        FROM (SELECT currency, CAST(sum(cost) AS DECIMAL(38, 12)) AS total FROM month_close_figures WHERE close_id = ? GROUP BY currency)),
       ?, ?, ?, ?`,
		c.ID, textOrNull(c.Organization), c.Month, string(c.Basis), string(c.Granularity), c.At.UTC(), c.Who, textOrNull(c.Reason), c.ID, c.ID, c.ContentHash, c.FinalWorkbook, textOrNull(c.FinalSHA256), allocationHash)
	if err != nil {
		return fmt.Errorf("record close: %w", err)
	}
	return nil
}

// RecordReopen adds a reopen of a closed month: its own row, so the close
// before it stays on record.
func (s *Store) RecordReopen(ctx context.Context, c MonthClose) error {
	_, err := s.db.ExecContext(ctx, `INSERT INTO month_closes (id, organization, month, basis, granularity, action, acted_at, who, reason)
VALUES (?, ?, ?, ?, ?, 'reopen', ?, ?, ?)`, c.ID, textOrNull(c.Organization), c.Month, string(c.Basis), string(c.Granularity), c.At.UTC(), c.Who, c.Reason)
	if err != nil {
		return fmt.Errorf("record reopen: %w", err)
	}
	return nil
}

// UncoveredDays lists the days of [from, to) that no loaded window of the
// organization, granularity, basis and scope covers, in order.
func (s *Store) UncoveredDays(ctx context.Context, org string, from, to time.Time, g tally.Granularity, basis tally.Basis, scope string) ([]time.Time, error) {
	ledger, err := s.Ledger(ctx, org, g, basis, scope)
	if err != nil {
		return nil, err
	}
	var out []time.Time
	for d := from; d.Before(to); d = d.AddDate(0, 0, 1) {
		covered := false
		for _, w := range ledger {
			if !d.Before(w.Start) && d.Before(w.End) {
				covered = true
				break
			}
		}
		if !covered {
			out = append(out, d)
		}
	}
	return out, nil
}
