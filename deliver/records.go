package deliver

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/tally-dev/tally/store"
)

// Kinds of deliveries.
const (
	KindMonth = "month" // a month's workbook, sent once the month is over
	KindFinal = "final" // a close's final workbook
	// KindStatement is a close's final chargeback statement, mailed to
	// its cost centre's owner.
	KindStatement = "statement"
)

// Statuses of deliveries.
const (
	StatusPending = "pending" // recorded before sending: a kill may have cut it short
	StatusSent    = "sent"
)

// Record is one row of deliveries: a workbook sent (or about to be) to a
// target.
type Record struct {
	Target    string // smtp:<host> or dir:<folder>
	Kind      string // KindMonth, KindFinal or KindStatement
	Month     time.Time
	Path      string
	SHA256    string // of the bytes sent
	Status    string
	MessageID string // mail only
	RunID     uuid.UUID
	// Organization is whose own workbook it is; "" for the store's (the
	// group's), NULL in deliveries.
	Organization string
}

// recordOf returns what deliveries holds for a workbook and target, or nil
// when it was never tried. A final workbook (or statement) is known by its
// bytes, so the same bytes are never sent twice and a new final always is;
// a month's workbook (rewritten every night with a new generation time) by
// its month, so it goes once, and an organization's own workbook (org)
// once beside it. A sent row wins over a pending one.
func recordOf(ctx context.Context, st *store.Store, target, kind, org string, month time.Time, sha256 string) (*Record, error) {
	q := `SELECT target, kind, month, path, sha256, status, message_id, run_id FROM deliveries
WHERE target = ? AND kind = ? AND sha256 = ?
ORDER BY status = 'sent' DESC, delivered_at DESC LIMIT 1`
	args := []any{target, kind, sha256}
	if kind == KindMonth {
		q = `SELECT target, kind, month, path, sha256, status, message_id, run_id FROM deliveries
WHERE target = ? AND kind = 'month' AND month = ? AND organization IS NOT DISTINCT FROM ?
ORDER BY status = 'sent' DESC, delivered_at DESC LIMIT 1`
		args = []any{target, month, textOrNull(org)}
	}
	var d Record
	var msgID sql.NullString
	var run string
	err := st.DB().QueryRowContext(ctx, q, args...).Scan(&d.Target, &d.Kind, &d.Month, &d.Path, &d.SHA256, &d.Status, &msgID, &run)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read deliveries: %w", err)
	}
	d.Month, d.MessageID = d.Month.UTC(), msgID.String
	d.RunID, _ = uuid.Parse(run)
	return &d, nil
}

// recordPending records a delivery about to be sent, replacing an earlier
// pending row of the same workbook and target, so the record exists (with
// its Message-ID) before anything leaves.
func recordPending(ctx context.Context, st *store.Store, d Record) error {
	return st.InTx(ctx, "record delivery", func(conn *sql.Conn) error {
		if _, err := conn.ExecContext(ctx, `DELETE FROM deliveries WHERE target = ? AND status = 'pending'
AND ((kind = ? AND ? <> 'month' AND sha256 = ?) OR (kind = 'month' AND ? = 'month' AND month = ? AND organization IS NOT DISTINCT FROM ?))`,
			d.Target, d.Kind, d.Kind, d.SHA256, d.Kind, d.Month, textOrNull(d.Organization)); err != nil {
			return fmt.Errorf("record delivery of %s to %s: %w", d.Path, d.Target, err)
		}
		if _, err := conn.ExecContext(ctx, `INSERT INTO deliveries (target, path, sha256, delivered_at, run_id, kind, month, status, message_id, organization)
VALUES (?, ?, ?, ?, ?, ?, ?, 'pending', ?, ?)`,
			d.Target, d.Path, d.SHA256, time.Now().UTC(), d.RunID.String(), d.Kind, d.Month, textOrNull(d.MessageID), textOrNull(d.Organization)); err != nil {
			return fmt.Errorf("record delivery of %s to %s: %w", d.Path, d.Target, err)
		}
		return nil
	})
}

// markSent notes that the pending delivery of these bytes to target went.
func markSent(ctx context.Context, st *store.Store, target, sha256 string, runID uuid.UUID) error {
	return st.InTx(ctx, "record delivery", func(conn *sql.Conn) error {
		if _, err := conn.ExecContext(ctx, `UPDATE deliveries SET status = 'sent', delivered_at = ?, run_id = ?
WHERE target = ? AND sha256 = ? AND status = 'pending'`, time.Now().UTC(), runID.String(), target, sha256); err != nil {
			return fmt.Errorf("record delivery to %s: %w", target, err)
		}
		return nil
	})
}

// textOrNull is s, or NULL when empty (deliveries' organization and
// message_id).
func textOrNull(s string) sql.NullString { return sql.NullString{String: s, Valid: s != ""} }
