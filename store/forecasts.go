package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/tally-dev/tally"
)

// Forecast is one row of the forecasts view: a scope's month to date and
// expected month-end cost in one currency. Amounts are rounded to cents.
type Forecast struct {
	Month     time.Time
	ScopeKind string // all, project, payment_method or family
	Scope     string // "" for all
	Currency  string
	AsOf      time.Time // the last complete day of the data
	// Through is how far the data reaches: the last day holding usage,
	// whether it is complete, and the days fetched after it that held
	// none.
	Through  tally.DataThrough
	Actual   tally.Decimal
	Forecast tally.Decimal
}

// CurrentForecasts returns the forecasts of the month after the data's
// last complete day: the month a budget is checked against. None when no
// usage at hour or day granularity is loaded. It reads that month and the
// 28 days before, whatever the history. A replay's asOf (zero for none)
// gives them as they stood on the morning of that day (AsOfConn).
func (s *Store) CurrentForecasts(ctx context.Context, asOf time.Time) ([]Forecast, error) {
	conn, release, err := s.AsOfConn(ctx, asOf)
	if err != nil {
		return nil, fmt.Errorf("read forecasts: %w", err)
	}
	defer release()
	rows, err := queryDays(ctx, conn, `SELECT month, scope_kind, scope, currency, as_of, last_usage_day, last_fetched_day,
       CAST(round(actual_cost, 2) AS DECIMAL(38, 2))::VARCHAR, CAST(round(forecast_cost, 2) AS DECIMAL(38, 2))::VARCHAR
FROM forecasts WHERE month = CAST(date_trunc('month', as_of + 1) AS DATE)
ORDER BY scope_kind, scope, currency`, farFuture, farFuture)
	if err != nil {
		return nil, fmt.Errorf("read forecasts: %w", err)
	}
	defer rows.Close()
	var out []Forecast
	for rows.Next() {
		var f Forecast
		var actual, forecast string
		var fetched sql.NullTime
		if err := rows.Scan(&f.Month, &f.ScopeKind, &f.Scope, &f.Currency, &f.AsOf, &f.Through.LastUsageDay, &fetched, &actual, &forecast); err != nil {
			return nil, fmt.Errorf("read forecasts: %w", err)
		}
		f.Month, f.AsOf = f.Month.UTC(), f.AsOf.UTC()
		f.Through.AsOf, f.Through.LastUsageDay = f.AsOf, f.Through.LastUsageDay.UTC()
		if fetched.Valid {
			f.Through.LastFetchedDay = fetched.Time.UTC()
		}
		if f.Actual, err = tally.ParseDecimal(actual); err == nil {
			f.Forecast, err = tally.ParseDecimal(forecast)
		}
		if err != nil {
			return nil, fmt.Errorf("read forecasts: %w", err)
		}
		out = append(out, f)
	}
	return out, rows.Err()
}

// Anomaly is one row of the anomalies view. Amounts are rounded to cents.
type Anomaly struct {
	Organization           string
	Day                    time.Time
	Project, Meter         string
	Currency               string
	Cost, Baseline, Excess tally.Decimal
	Score                  *float64 // excess in scaled MADs; nil when the baseline never varies
}

// Anomalies returns the anomalous days from since on, oldest first. It
// reads those days and the 28 before, whatever the history.
func (s *Store) Anomalies(ctx context.Context, since time.Time) ([]Anomaly, error) {
	rows, err := queryDays(ctx, s.db, `SELECT organization, day, project, meter_name, currency,
       CAST(round(cost, 2) AS DECIMAL(38, 2))::VARCHAR, CAST(round(baseline, 2) AS DECIMAL(38, 2))::VARCHAR,
       CAST(round(excess, 2) AS DECIMAL(38, 2))::VARCHAR, score
FROM anomalies WHERE day >= CAST($since AS DATE) ORDER BY day, organization, project, meter_name, currency`, since.UTC(), farFuture, sql.Named("since", since.UTC()))
	if err != nil {
		return nil, fmt.Errorf("read anomalies: %w", err)
	}
	defer rows.Close()
	var out []Anomaly
	for rows.Next() {
		var a Anomaly
		var cost, base, excess string
		var score sql.NullFloat64
		if err := rows.Scan(&a.Organization, &a.Day, &a.Project, &a.Meter, &a.Currency, &cost, &base, &excess, &score); err != nil {
			return nil, fmt.Errorf("read anomalies: %w", err)
		}
		a.Day = a.Day.UTC()
		if score.Valid {
			a.Score = &score.Float64
		}
		for _, p := range []struct {
			s string
			d *tally.Decimal
		}{{cost, &a.Cost}, {base, &a.Baseline}, {excess, &a.Excess}} {
			if *p.d, err = tally.ParseDecimal(p.s); err != nil {
				return nil, fmt.Errorf("read anomalies: %w", err)
			}
		}
		out = append(out, a)
	}
	return out, rows.Err()
}

// SaveAlertSettings records the anomaly thresholds the anomalies view
// applies (the config's anomalies section).
func (s *Store) SaveAlertSettings(ctx context.Context, mads, minAmount, minPercent tally.Decimal) error {
	if err := s.writable("save alert settings"); err != nil {
		return err
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("save alert settings: %w", err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `DELETE FROM alert_settings`); err != nil {
		return fmt.Errorf("save alert settings: %w", err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO alert_settings VALUES (CAST(? AS DECIMAL(9, 3)), CAST(? AS DECIMAL(18, 6)), CAST(? AS DECIMAL(9, 3)), ?)`,
		mads.String(), minAmount.String(), minPercent.String(), time.Now().UTC()); err != nil {
		return fmt.Errorf("save alert settings: %w", err)
	}
	return tx.Commit()
}

// Alert statuses.
const (
	AlertPending = "pending" // to send
	AlertSent    = "sent"    // every sink took it
	AlertStale   = "stale"   // found too long after its day to be news: recorded, never sent
)

// Alert is one row of alerts.
type Alert struct {
	Key string
	// Organization is whose cost it is about; "" when every
	// organization's (a budget) or the store has one.
	Organization string
	Kind         string // budget, anomaly or stale (usage older than usage.stale_after)
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

// RecordAlert adds a to alerts unless an alert of its key is there
// already: an alert is found once. It reports whether a was new.
func (s *Store) RecordAlert(ctx context.Context, a Alert) (bool, error) {
	if err := s.writable("record alert"); err != nil {
		return false, err
	}
	res, err := s.db.ExecContext(ctx, `INSERT INTO alerts (key, kind, found_at, run_id, month, scope, currency, text, payload, status, attempts, organization)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0, ?) ON CONFLICT (key) DO NOTHING`,
		a.Key, a.Kind, a.FoundAt.UTC(), a.RunID.String(), a.Month.UTC(), a.Scope, a.Currency, a.Text, a.Payload, a.Status, textOrNull(a.Organization))
	if err != nil {
		return false, fmt.Errorf("record alert %s: %w", a.Key, err)
	}
	n, err := res.RowsAffected()
	return n > 0, err
}

// KnownAlert reports whether an alert of key was recorded.
func (s *Store) KnownAlert(ctx context.Context, key string) (bool, error) {
	var n int
	if err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM alerts WHERE key = ?`, key).Scan(&n); err != nil {
		return false, fmt.Errorf("read alerts: %w", err)
	}
	return n > 0, nil
}

// PendingAlerts returns the alerts still to send, oldest first.
func (s *Store) PendingAlerts(ctx context.Context) ([]Alert, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT key, kind, found_at, CAST(run_id AS VARCHAR), month, scope, currency, text, payload, status, attempts, coalesce(last_error, '')
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

// MarkAlert records one send of the alert of key: sent when sendErr is
// nil, else the error, for the next run to try again.
func (s *Store) MarkAlert(ctx context.Context, key string, sendErr error) error {
	if err := s.writable("mark alert"); err != nil {
		return err
	}
	var err error
	if sendErr == nil {
		_, err = s.db.ExecContext(ctx, `UPDATE alerts SET status = 'sent', sent_at = ?, attempts = attempts + 1, last_error = NULL WHERE key = ?`, time.Now().UTC(), key)
	} else {
		_, err = s.db.ExecContext(ctx, `UPDATE alerts SET attempts = attempts + 1, last_error = ? WHERE key = ?`, message(sendErr.Error()), key)
	}
	if err != nil {
		return fmt.Errorf("mark alert %s: %w", key, err)
	}
	return nil
}

// scopeColumns are the usage_day_cost columns scope_daily_cost's scopes
// are, but for cost centres (a join).
var scopeColumns = map[string]string{"all": "''", "project": "coalesce(project, '')", "payment_method": "coalesce(payment_method, '')",
	"family": "coalesce(family, '')", "organization": "organization"}

// ScopeCurrencies lists the currencies a budget scope has usage in, per
// scope_daily_cost. It reads the days' cost of that scope only: the view
// sums every scope of every day kept (585 MB at 100 million rows).
func (s *Store) ScopeCurrencies(ctx context.Context, kind, scope string) ([]string, error) {
	q := `SELECT DISTINCT currency FROM scope_daily_cost WHERE scope_kind = ? AND scope = ? ORDER BY currency`
	args := []any{kind, scope}
	if col, ok := scopeColumns[kind]; ok {
		q, args = `SELECT DISTINCT currency FROM usage_day_cost WHERE `+col+` = ? ORDER BY currency`, []any{scope}
	}
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("read scope currencies: %w", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var c string
		if err := rows.Scan(&c); err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, rows.Err()
}
