package allocation

import (
	"context"
	"database/sql"
	_ "embed" // chargebackSQL
	"fmt"
	"slices"

	"github.com/tally-dev/tally"
	tallysql "github.com/tally-dev/tally/sql"
	"github.com/tally-dev/tally/store"
)

// chargebackSQL is a month's chargeback, line by line: the package's SQL
// file, in its own folder as the other capabilities' (export/sql).
//
//go:embed sql/chargeback.sql
var chargebackSQL string

// Line is one line of a month's chargeback: the part of the charges of
// one origin project, meter, paid-as and rule entry a cost centre (or
// Unallocated) receives in one currency.
type Line struct {
	CostCentre, Currency, Project, Meter, PaidAs, Method, Version, Note string
	// Ratio is the receiver's weight over the total, Amount the part
	// received, exact; NULL in SQL is not Valid.
	Ratio, Amount sql.Null[tally.Decimal]
}

// Shared reports whether the line is a part of a shared charge.
func (l Line) Shared() bool { return l.Version != "" }

// HasRecords reports whether src has the chargeback tables (migration
// 0012): an analysts' copy an older Tally published has not.
func HasRecords(ctx context.Context, src store.Querier) (bool, error) {
	var n int
	if err := store.ScanOne(ctx, src, `SELECT count(*) FROM duckdb_tables() WHERE table_name IN ('allocation_rules', 'allocation_cost_centres')`, nil, &n); err != nil {
		return false, err
	}
	return n == 2, nil
}

// Lines reads a month's chargeback from src: the split of cost_allocation
// over month, a query of the month's usage rows (usage_rows' columns)
// whose named parameters args binds, with a, when not nil, the allocation
// of open months in place of the one src holds (closed months keep what
// their close froze). Lines come by cost centre (Unallocated last),
// currency, rule entry, project, meter, paid-as and method.
func Lines(ctx context.Context, src store.Querier, month string, args []any, a *tally.Allocation) ([]Line, error) {
	// The views of chargeback read usage_finest: here the report month's
	// rows, so the sheet ties out to the Summary to the last digit.
	ctes := []tallysql.CTE{{Name: "month_usage", Query: month}, {Name: "usage_finest", Query: "SELECT * FROM month_usage"}}
	if a != nil {
		// The config's allocation for open months, rather than what the
		// last run wrote to the analysts' copy; closed months keep theirs.
		centres, rules := rowsJSON(*a)
		for _, t := range []struct{ table, param, rows string }{
			{"allocation_cost_centres", "$allocation_centres", centres},
			{"allocation_rules", "$allocation_rules", rules},
		} {
			ctes = append(ctes, tallysql.CTE{Name: t.table, Query: "SELECT * FROM main." + t.table + " WHERE close_id IS NOT NULL UNION ALL " +
				fromJSON(t.table, "NULL", t.param)})
			args = append(slices.Clip(args), sql.Named(t.param[1:], t.rows))
		}
	}
	views := []string{"allocation_charges", "cost_allocation"}
	for _, v := range views {
		c, err := tallysql.View(v)
		if err != nil {
			return nil, err
		}
		ctes = append(ctes, c)
	}
	// Composed by the inliner: the chargeback views are read over the
	// report month's rows in place of usage_finest, which neither a view
	// nor a table macro can be handed (see tallysql.Inline).
	q, err := tallysql.InlineProvided(tallysql.With(chargebackSQL, ctes...), append(views, "usage_finest")...)
	if err != nil {
		return nil, err
	}
	rows, err := src.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("query chargeback: %w", err)
	}
	defer rows.Close()
	lines := []Line{}
	for rows.Next() {
		var l Line
		var unallocated bool
		var ratio, amount sql.NullString
		if err := rows.Scan(&l.CostCentre, &l.Currency, &unallocated, &l.Project, &l.Meter, &l.PaidAs, &l.Method, &l.Version, &ratio, &amount, &l.Note); err != nil {
			return nil, fmt.Errorf("query chargeback: read row: %w", err)
		}
		if l.Ratio, err = decimal(ratio); err != nil {
			return nil, fmt.Errorf("query chargeback: read row: %w", err)
		}
		if l.Amount, err = decimal(amount); err != nil {
			return nil, fmt.Errorf("query chargeback: read row: %w", err)
		}
		lines = append(lines, l)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("query chargeback: %w", err)
	}
	return lines, nil
}

// decimal reads a DECIMAL the query renders as text, so no float touches
// it.
func decimal(s sql.NullString) (sql.Null[tally.Decimal], error) {
	if !s.Valid {
		return sql.Null[tally.Decimal]{}, nil
	}
	d, err := tally.ParseDecimal(s.String)
	if err != nil {
		return sql.Null[tally.Decimal]{}, fmt.Errorf("money: %w", err)
	}
	return sql.Null[tally.Decimal]{V: d, Valid: true}, nil
}

// CentreTotal is one cost centre's month in one currency.
type CentreTotal struct {
	CostCentre, Currency          string
	Direct, Shared, Total, Billed tally.Decimal
	Methods                       []string // rule@from (method), as received
}

// Totals sums the lines per cost centre and currency, in the lines' order
// (cost centres by name, Unallocated last).
func Totals(lines []Line) []*CentreTotal {
	var out []*CentreTotal
	for _, l := range lines {
		if len(out) == 0 || out[len(out)-1].CostCentre != l.CostCentre || out[len(out)-1].Currency != l.Currency {
			out = append(out, &CentreTotal{CostCentre: l.CostCentre, Currency: l.Currency})
		}
		t := out[len(out)-1]
		t.Total = t.Total.Add(l.Amount.V)
		if l.PaidAs == "direct" || l.PaidAs == "other" {
			t.Billed = t.Billed.Add(l.Amount.V)
		}
		if !l.Shared() {
			t.Direct = t.Direct.Add(l.Amount.V)
			continue
		}
		t.Shared = t.Shared.Add(l.Amount.V)
		if m := l.Version + " (" + l.Method + ")"; !slices.Contains(t.Methods, m) {
			t.Methods = append(t.Methods, m)
		}
	}
	return out
}
