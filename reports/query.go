package reports

import (
	"context"
	"database/sql"
	"fmt"
	"io/fs"
	"math/big"

	"github.com/tally-dev/tally"
	tallysql "github.com/tally-dev/tally/sql"
	"github.com/tally-dev/tally/store"
)

// query runs sql/reports/<name>.sql with the period's parameters, and
// extra ones a query of its own needs. Every query gets the same named
// parameters and uses those it needs.
func (b *builder) query(name string, extra ...any) (*sql.Rows, error) {
	q, err := b.queryText(name)
	if err != nil {
		return nil, err
	}
	rows, err := b.src.QueryContext(b.ctx, q, append(b.args(), extra...)...)
	if err != nil {
		return nil, fmt.Errorf("query %s: %w", name, err)
	}
	return rows, nil
}

// queryText is the SQL query runs for sql/reports/<name>.sql: the file
// with what it reads defined in front of it.
func (b *builder) queryText(name string) (string, error) {
	text, err := fs.ReadFile(tallysql.Reports, "reports/"+name+".sql")
	if err != nil {
		return "", fmt.Errorf("read query %s: %w", name, err)
	}
	month, err := fs.ReadFile(tallysql.Reports, "reports/month_usage.sql")
	if err != nil {
		return "", fmt.Errorf("read query %s: %w", name, err)
	}
	paid, err := fs.ReadFile(tallysql.Reports, "reports/month_paid.sql")
	if err != nil {
		return "", fmt.Errorf("read query %s: %w", name, err)
	}
	paidBy, err := fs.ReadFile(tallysql.Reports, "reports/month_paid_by.sql")
	if err != nil {
		return "", fmt.Errorf("read query %s: %w", name, err)
	}
	// Besides tables, the sheet queries read month_usage, the report
	// month's rows, month_paid, its value split by how it is paid,
	// month_paid_by, that split summed for the sheets of totals (a query
	// that does not read them leaves them unplanned), and views. All
	// are put in front of the query, so the workbook uses this Tally's
	// definitions even when built from an analysts' copy an older Tally
	// published (tallysql.Inline).
	// The budget and anomaly figures read usage_day_cost for the days they
	// need only (store.DayRange): the month, its baseline and the latest
	// days, not the history kept.
	// The queries about the report month's payment methods and meters
	// read its meters (meter_months) from the month's usage rows only,
	// and the skus of the per-project report's meters only (meter_skus):
	// the snapshots in force and rate card matches of the other months
	// are never theirs.
	var where map[string]string
	defs, err := monthDefs(name)
	if err != nil {
		return "", fmt.Errorf("read query %s: %w", name, err)
	}
	if dayQueries[name] {
		if err := b.dayRange(); err != nil {
			return "", fmt.Errorf("query %s: %w", name, err)
		}
		// The days' cost (and the anomalies' baselines) as the store
		// keeps them where it does, one row a day and meter, else the
		// usage rows of those days.
		where, defs = b.days.Where, b.days.Defs
	}
	if b.p.Organization != "" {
		where = orgWhere(where)
	}
	// Composed by the inliner rather than read from views and macros:
	// which definition of a view counts is known only once the database
	// is open (kept tables, the report month's meters), and the day
	// figures' condition must reach the usage table's scan under every
	// view above it (see tallysql.Inline).
	q, err := tallysql.InlineDefined(tallysql.With(string(text), tallysql.CTE{Name: "month_usage", Query: string(month)}, tallysql.CTE{Name: "month_paid", Query: string(paid)}, tallysql.CTE{Name: "month_paid_by", Query: string(paidBy)}), where, defs)
	if err != nil {
		return "", fmt.Errorf("read query %s: %w", name, err)
	}
	if dayQueries[name] {
		// The budget scopes of cost centres read allocation_cost_centres,
		// which a copy an older Tally published does not have.
		has, err := b.chargebackTables()
		if err != nil {
			return "", fmt.Errorf("query %s: %w", name, err)
		}
		if !has {
			q = tallysql.With(q, tallysql.CTE{Name: "allocation_cost_centres", Query: noCostCentres})
		}
	}
	return q, nil
}

// args are the named parameters every report query gets.
func (b *builder) args() []any {
	return []any{
		sql.Named("basis", string(b.p.Basis)),
		sql.Named("granularity", string(b.p.Granularity)),
		sql.Named("month_start", b.p.Month),
		sql.Named("month_end", b.p.end()),
		sql.Named("closed", b.closed),
		sql.Named("tolerance", b.opts.Tolerance),
		sql.Named("days_from", b.daysFrom),
		sql.Named("days_to", b.daysTo),
		sql.Named("org", b.orgParam()),
		sql.Named("group", b.group),
	}
}

// orgParam is $org: the workbook's organization, NULL for every one.
func (b *builder) orgParam() any { return orgArg(b.p.Organization) }

// orgWhere narrows the inlined usage and usage_meter_days of an
// organization's workbook to its rows.
func orgWhere(where map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range where {
		out[k] = v
	}
	for _, k := range []string{"usage", "usage_meter_days"} {
		if c, ok := out[k]; ok {
			out[k] = "(" + c + ") AND organization = $org"
		} else {
			out[k] = "organization = $org"
		}
	}
	return out
}

// dayQueries are the queries that read usage_day_cost under
// store.DaysWhere.
var dayQueries = map[string]bool{"budget": true, "anomalies": true}

// monthMeterQueries are the queries that read the report month's meters
// (meter_months) and, through rate_card_matches, meter_skus.
var monthMeterQueries = map[string]bool{"rate_card_check": true, "flags": true, "by_payment_method": true}

// monthDefs is what the query name reads in place of meter_months and
// meter_skus (tallysql.InlineDefined): sql/reports/month_meters.sql and
// project_meter_skus.sql, which read the usage table for the report
// month and for the per-project report's meters. The views' own
// definitions derive the day from the usage rows before the month is
// chosen, which DuckDB cannot take to the table's scan: they read every
// month kept.
func monthDefs(name string) (map[string]string, error) {
	if !monthMeterQueries[name] {
		return nil, nil
	}
	defs := map[string]string{}
	for view, file := range map[string]string{"meter_months": "month_meters", "meter_skus": "project_meter_skus"} {
		text, err := fs.ReadFile(tallysql.Reports, "reports/"+file+".sql")
		if err != nil {
			return nil, err
		}
		defs[view] = string(text)
	}
	return defs, nil
}

// dayRange finds, once per workbook, the days the budget and anomaly
// figures of the month need.
func (b *builder) dayRange() error {
	if !b.daysTo.IsZero() {
		return nil
	}
	lo, hi, err := store.DayRange(b.ctx, b.src, b.p.Month, b.p.end())
	if err != nil {
		return err
	}
	if b.days, err = store.ReadDays(b.ctx, b.src, b.p.Organization != ""); err != nil {
		return err
	}
	b.daysFrom, b.daysTo = lo, hi
	return nil
}

// MonthRows is how many usage rows a workbook for p would read, by the
// same rule the workbook uses (month_usage): 0 means it would be empty.
func MonthRows(ctx context.Context, src Source, p Period) (int64, error) {
	if err := p.validate(); err != nil {
		return 0, err
	}
	p.Month = p.Month.UTC()
	b := &builder{ctx: ctx, src: src, p: p}
	var n int64
	err := b.each("month_rows", func(r *sql.Rows) error { return r.Scan(&n) })
	return n, err
}

// each runs a query and calls scan for every row; scan reads the row with
// rows.Scan.
func (b *builder) each(name string, scan func(*sql.Rows) error, extra ...any) error {
	rows, err := b.query(name, extra...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := scan(rows); err != nil {
			return fmt.Errorf("query %s: read row: %w", name, err)
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("query %s: %w", name, err)
	}
	return rows.Close()
}

// money is an exact amount as the queries hand it over: DECIMAL cast to
// text, so no float touches it before its cell.
type money struct {
	dec   tally.Decimal
	valid bool
}

// Scan reads a DECIMAL rendered as text, or NULL.
func (m *money) Scan(src any) error {
	var s string
	switch v := src.(type) {
	case nil:
		*m = money{}
		return nil
	case string:
		s = v
	case []byte:
		s = string(v)
	default:
		return fmt.Errorf("money: want DECIMAL as text, got %T", src)
	}
	d, err := tally.ParseDecimal(s)
	if err != nil {
		return fmt.Errorf("money: %w", err)
	}
	*m = money{dec: d, valid: true}
	return nil
}

// float is the double nearest the exact amount: what an Excel cell holds.
func (m money) float() float64 { return m.dec.Float64() }

// isZero reports whether m is zero or NULL.
func (m money) isZero() bool { return !m.valid || m.dec.IsZero() }

// cents renders the amount rounded to the cent (half away from zero), for
// text that quotes an amount.
func (m money) cents() string {
	return m.round(2)
}

func (m money) round(places int) string {
	r := m.dec.Rat()
	scale := new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(places)), nil))
	r.Mul(r, scale)
	// Round half away from zero on the scaled value.
	num, den := r.Num(), r.Denom()
	q, rem := new(big.Int).QuoRem(num, den, new(big.Int))
	if new(big.Int).Mul(new(big.Int).Abs(rem), big.NewInt(2)).Cmp(den) >= 0 {
		if num.Sign() < 0 {
			q.Sub(q, big.NewInt(1))
		} else {
			q.Add(q, big.NewInt(1))
		}
	}
	return tally.NewDecimal(q, places).String()
}
