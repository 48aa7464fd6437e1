package reports

import (
	"database/sql"
	"fmt"
	"io/fs"
	"math/big"
	"slices"
	"strings"

	"github.com/tally-dev/tally"
	tallysql "github.com/tally-dev/tally/sql"
	"github.com/tally-dev/tally/store"
)

const (
	sheetChargeback      = "Chargeback"
	sheetChargebackLines = "Chargeback lines"
)

// chargeLine is one line of the month's chargeback (chargeback.sql).
type chargeLine struct {
	centre, currency, project, meter, paidAs, method, version, note string
	ratio, amount                                                   money
}

// shared reports whether the line is a part of a shared charge.
func (l chargeLine) shared() bool { return l.version != "" }

// chargeback reads the month's chargeback lines, once per workbook: none
// when no cost centre is configured for the month.
func (b *builder) chargeback() ([]chargeLine, error) {
	if b.charges != nil {
		return *b.charges, nil
	}
	// An analysts' copy an older Tally published has no chargeback
	// tables: without cost centres configured that is no chargeback;
	// with them, the copy must be published again first.
	has, err := b.chargebackTables()
	if err != nil {
		return nil, fmt.Errorf("query chargeback: %w", err)
	}
	if !has {
		if b.opts.Allocation != nil && !b.opts.Allocation.Empty() {
			return nil, fmt.Errorf("the analysts' copy was published by a Tally without chargeback: run tally fetch (any run that writes publishes it again), then report")
		}
		b.charges = &[]chargeLine{}
		return nil, nil
	}
	text, err := fs.ReadFile(tallysql.Reports, "reports/chargeback.sql")
	if err != nil {
		return nil, err
	}
	month, err := fs.ReadFile(tallysql.Reports, "reports/month_usage.sql")
	if err != nil {
		return nil, err
	}
	// The views of chargeback read usage_finest: here the report month's
	// rows, so the sheet ties out to the Summary to the last digit.
	ctes := []tallysql.CTE{{Name: "month_usage", Query: string(month)}, {Name: "usage_finest", Query: "SELECT * FROM month_usage"}}
	var args []any
	if b.opts.Allocation != nil {
		// The config's allocation for open months, rather than what the
		// last run wrote to the analysts' copy; closed months keep theirs.
		centres, rules := store.AllocationJSON(*b.opts.Allocation)
		for _, t := range []struct{ table, param, rows string }{
			{"allocation_cost_centres", "$allocation_centres", centres},
			{"allocation_rules", "$allocation_rules", rules},
		} {
			ctes = append(ctes, tallysql.CTE{Name: t.table, Query: "SELECT * FROM main." + t.table + " WHERE close_id IS NOT NULL UNION ALL " +
				store.AllocationFromJSON(t.table, "NULL", t.param)})
			args = append(args, sql.Named(t.param[1:], t.rows))
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
	q, err := tallysql.InlineProvided(tallysql.With(string(text), ctes...), append(views, "usage_finest")...)
	if err != nil {
		return nil, err
	}
	rows, err := b.src.QueryContext(b.ctx, q, append(b.args(), args...)...)
	if err != nil {
		return nil, fmt.Errorf("query chargeback: %w", err)
	}
	defer rows.Close()
	lines := []chargeLine{}
	for rows.Next() {
		var l chargeLine
		var unallocated bool
		if err := rows.Scan(&l.centre, &l.currency, &unallocated, &l.project, &l.meter, &l.paidAs, &l.method, &l.version, &l.ratio, &l.amount, &l.note); err != nil {
			return nil, fmt.Errorf("query chargeback: read row: %w", err)
		}
		lines = append(lines, l)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("query chargeback: %w", err)
	}
	b.charges = &lines
	return lines, nil
}

// chargebackTables reports, once per workbook, whether the source has the
// chargeback tables (migration 0012).
func (b *builder) chargebackTables() (bool, error) {
	if b.hasAllocation == nil {
		var n int
		if err := b.scalar(`SELECT count(*) FROM duckdb_tables() WHERE table_name IN ('allocation_rules', 'allocation_cost_centres')`, &n); err != nil {
			return false, err
		}
		has := n == 2
		b.hasAllocation = &has
	}
	return *b.hasAllocation, nil
}

// noCostCentres stands for allocation_cost_centres in a source without it:
// the budget scopes of cost centres are then empty.
const noCostCentres = `SELECT CAST(NULL AS UUID) AS close_id, 0 AS position, '' AS cost_centre, '' AS owner, '' AS project WHERE false`

// scalar reads the one value a query returns into dest.
func (b *builder) scalar(q string, dest any) error {
	return store.ScanOne(b.ctx, b.src, q, nil, dest)
}

// centreTotal is one cost centre's month in one currency.
type centreTotal struct {
	centre, currency              string
	direct, shared, total, billed tally.Decimal
	methods                       []string // rule@from (method), as received
}

// centreTotals sums the lines per cost centre and currency, in the lines'
// order (cost centres by name, Unallocated last).
func centreTotals(lines []chargeLine) []*centreTotal {
	var out []*centreTotal
	for _, l := range lines {
		if len(out) == 0 || out[len(out)-1].centre != l.centre || out[len(out)-1].currency != l.currency {
			out = append(out, &centreTotal{centre: l.centre, currency: l.currency})
		}
		t := out[len(out)-1]
		t.total = t.total.Add(l.amount.dec)
		if l.paidAs == "direct" || l.paidAs == "other" {
			t.billed = t.billed.Add(l.amount.dec)
		}
		if !l.shared() {
			t.direct = t.direct.Add(l.amount.dec)
			continue
		}
		t.shared = t.shared.Add(l.amount.dec)
		if m := l.version + " (" + l.method + ")"; !slices.Contains(t.methods, m) {
			t.methods = append(t.methods, m)
		}
	}
	return out
}

// chargebackSheet fills the Chargeback sheet: per cost centre and
// currency the direct cost, the shared cost received and by which rules
// and methods, the total; the tie-out of each currency to the month's
// total; what fell back (the lines are on Chargeback lines).
func (b *builder) chargebackSheet(lines []chargeLine, totals []totalRow) error {
	s := sheetChargeback
	t, err := b.newTable(s, "Chargeback", 1, []column{
		{"Cost centre", 22}, {"Currency", 10}, {"Direct", 16}, {"Shared received", 16}, {"Total", 16}, {"Billed", 16}, {"Shared received by (rule, method)", 42},
	})
	if err != nil {
		return err
	}
	sums := map[string]tally.Decimal{}
	for _, c := range centreTotals(lines) {
		cells := []cell{b.wrapped(c.centre), b.txt(c.currency)}
		for _, d := range []tally.Decimal{c.direct, c.shared, c.total, c.billed} {
			v, err := b.amount(money{dec: d, valid: true}, c.currency)
			if err != nil {
				return err
			}
			cells = append(cells, v)
		}
		if err := t.add(append(cells, b.wrapped(strings.Join(c.methods, "; ")))...); err != nil {
			return err
		}
		sums[c.currency] = sums[c.currency].Add(c.total)
	}
	if err := t.finish(""); err != nil {
		return err
	}
	row := t.row + 2
	if err := b.putRow(s, row, cell{"Tie-out: cost centres plus Unallocated against the month's total (Summary), per currency", b.st.sectionWrap}); err != nil {
		return err
	}
	for _, tot := range totals {
		month := tot.split.total
		diff := month.dec.Add(negate(sums[tot.currency]))
		for _, r := range []struct {
			label string
			d     tally.Decimal
		}{{"Cost centres + Unallocated", sums[tot.currency]}, {"Month total (Summary)", month.dec}, {"Difference", diff}} {
			v, err := b.amount(money{dec: r.d, valid: true}, tot.currency)
			if err != nil {
				return err
			}
			row++
			if err := b.putRow(s, row, b.txt(r.label), b.txt(tot.currency), cell{nil, 0}, cell{nil, 0}, v); err != nil {
				return err
			}
		}
	}
	var notes []string
	for _, l := range lines {
		if n := l.version + ": " + l.note; l.note != "" && !slices.Contains(notes, n) {
			notes = append(notes, n)
		}
	}
	row += 2
	if len(notes) == 0 {
		return nil
	}
	if err := b.putRow(s, row, cell{"Fell back: a rule's method could not apply this month", b.st.sectionWrap}); err != nil {
		return err
	}
	for _, n := range notes {
		row++
		if err := b.wrapAcross(s, row, 7, n); err != nil {
			return err
		}
	}
	return nil
}

// chargebackLines fills the Chargeback lines sheet: every part of a shared
// charge a cost centre received, with its rule, method and ratio.
func (b *builder) chargebackLines(lines []chargeLine) error {
	lt, err := b.newTable(sheetChargebackLines, "ChargebackShared", 1, []column{
		{"Cost centre", 22}, {"Currency", 10}, {"Amount", 16}, {"Ratio", 10}, {"Method", 14}, {"Paid as", 10}, {"Rule; origin project, meter", 50},
	})
	if err != nil {
		return err
	}
	for _, l := range lines {
		if !l.shared() {
			continue
		}
		v, err := b.amount(l.amount, l.currency)
		if err != nil {
			return err
		}
		if err := lt.add(b.wrapped(l.centre), b.txt(l.currency), v, b.ratio(l.ratio), b.txt(l.method), b.txt(l.paidAs), b.wrapped(l.origin())); err != nil {
			return err
		}
	}
	return lt.finish("No shared cost this month: every charge went to its project's cost centre or to Unallocated.")
}

// origin says where a shared line comes from and, when the rule's method
// fell back, why.
func (l chargeLine) origin() string {
	project := l.project
	if project == "" {
		project = "(no project)"
	}
	s := l.version + "; " + project + ", " + l.meter
	if l.note != "" {
		s += " (" + l.note + ")"
	}
	return s
}

func (b *builder) ratio(m money) cell {
	if !m.valid {
		return cell{nil, b.st.percent}
	}
	return cell{m.float(), b.st.percent}
}

func negate(d tally.Decimal) tally.Decimal {
	v, _ := d.Scaled(d.Scale())
	return tally.NewDecimal(new(big.Int).Neg(v), d.Scale())
}
