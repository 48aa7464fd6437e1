package alerts

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/tally-dev/tally"
	"github.com/tally-dev/tally/internal/secret"
	"github.com/tally-dev/tally/store"
)

// Alert statuses.
const (
	StatusPending = "pending" // to send
	StatusSent    = "sent"    // every sink took it
	StatusStale   = "stale"   // found too long after its day to be news: recorded, never sent
)

// Alert is one row of alerts.
type Alert struct {
	Key string
	// Organization is whose cost it is about; "" when every
	// organization's (a budget) or the store has one.
	Organization string
	Kind         string // budget, anomaly, stale (usage older than usage.stale_after) or commitment (drawn faster than it lasts)
	FoundAt      time.Time
	RunID        uuid.UUID
	Month        time.Time
	Scope        string
	Currency     string
	Text         string
	Payload      string
	Status       string
	SentAt       *time.Time
	Attempts     int
	LastError    string
}

// SaveSettings records the anomaly thresholds the anomalies view applies
// (the config's anomalies section).
func SaveSettings(ctx context.Context, st *store.Store, mads, minAmount, minPercent tally.Decimal) error {
	return st.InTx(ctx, "save alert settings", func(conn *sql.Conn) error {
		if _, err := conn.ExecContext(ctx, `DELETE FROM alert_settings`); err != nil {
			return fmt.Errorf("save alert settings: %w", err)
		}
		if _, err := conn.ExecContext(ctx, `INSERT INTO alert_settings VALUES (CAST(? AS DECIMAL(9, 3)), CAST(? AS DECIMAL(18, 6)), CAST(? AS DECIMAL(9, 3)), ?)`,
			mads.String(), minAmount.String(), minPercent.String(), time.Now().UTC()); err != nil {
			return fmt.Errorf("save alert settings: %w", err)
		}
		return nil
	})
}

// Record adds a to alerts unless an alert of its key is there already: an
// alert is found once. It reports whether a was new.
func Record(ctx context.Context, st *store.Store, a Alert) (bool, error) {
	var n int64
	err := st.InTx(ctx, "record alert", func(conn *sql.Conn) error {
		res, err := conn.ExecContext(ctx, `INSERT INTO alerts (key, kind, found_at, run_id, month, scope, currency, text, payload, status, attempts, organization)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0, ?) ON CONFLICT (key) DO NOTHING`,
			a.Key, a.Kind, a.FoundAt.UTC(), a.RunID.String(), a.Month.UTC(), a.Scope, a.Currency, a.Text, a.Payload, a.Status, nullText(a.Organization))
		if err != nil {
			return fmt.Errorf("record alert %s: %w", a.Key, err)
		}
		n, err = res.RowsAffected()
		return err
	})
	return n > 0, err
}

// Known reports whether an alert of key was recorded.
func Known(ctx context.Context, st *store.Store, key string) (bool, error) {
	var n int
	if err := st.DB().QueryRowContext(ctx, `SELECT count(*) FROM alerts WHERE key = ?`, key).Scan(&n); err != nil {
		return false, fmt.Errorf("read alerts: %w", err)
	}
	return n > 0, nil
}

// Pending returns the alerts still to send, oldest first.
func Pending(ctx context.Context, st *store.Store) ([]Alert, error) {
	rows, err := st.DB().QueryContext(ctx, `SELECT key, kind, found_at, CAST(run_id AS VARCHAR), month, scope, currency, text, payload, status, attempts, coalesce(last_error, '')
FROM alerts WHERE status = 'pending' ORDER BY found_at, key`)
	if err != nil {
		return nil, fmt.Errorf("read alerts: %w", err)
	}
	defer rows.Close()
	var out []Alert
	for rows.Next() {
		var a Alert
		var run string
		if err := rows.Scan(&a.Key, &a.Kind, &a.FoundAt, &run, &a.Month, &a.Scope, &a.Currency, &a.Text, &a.Payload, &a.Status, &a.Attempts, &a.LastError); err != nil {
			return nil, fmt.Errorf("read alerts: %w", err)
		}
		a.FoundAt, a.Month = a.FoundAt.UTC(), a.Month.UTC()
		a.RunID, _ = uuid.Parse(run)
		out = append(out, a)
	}
	return out, rows.Err()
}

// Mark records one send of the alert of key: sent when sendErr is nil,
// else the error (secrets redacted), for the next run to try again.
func Mark(ctx context.Context, st *store.Store, key string, sendErr error) error {
	return st.InTx(ctx, "mark alert", func(conn *sql.Conn) error {
		var err error
		if sendErr == nil {
			_, err = conn.ExecContext(ctx, `UPDATE alerts SET status = 'sent', sent_at = ?, attempts = attempts + 1, last_error = NULL WHERE key = ?`, time.Now().UTC(), key)
		} else {
			_, err = conn.ExecContext(ctx, `UPDATE alerts SET attempts = attempts + 1, last_error = ? WHERE key = ?`, nullText(secret.Redact(sendErr.Error())), key)
		}
		if err != nil {
			return fmt.Errorf("mark alert %s: %w", key, err)
		}
		return nil
	})
}

// nullText is s, or NULL when empty.
func nullText(s string) sql.NullString { return sql.NullString{String: s, Valid: s != ""} }
