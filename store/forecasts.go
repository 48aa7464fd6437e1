package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"

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
