package reports

import (
	"database/sql"
	"fmt"
	"io/fs"
	"math/big"
	"slices"
	"strings"

	"github.com/tally-dev/tally"
	"github.com/tally-dev/tally/allocation"
	tallysql "github.com/tally-dev/tally/sql"
)

const (
	sheetChargeback      = "Chargeback"
	sheetChargebackLines = "Chargeback lines"
)

// chargeLine is one line of the month's chargeback (allocation.Lines).
type chargeLine = allocation.Line

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
	month, err := fs.ReadFile(tallysql.Reports, "reports/month_usage.sql")
	if err != nil {
		return nil, err
	}
	lines, err := allocation.Lines(b.ctx, b.src, string(month), b.args(), b.opts.Allocation)
	if err != nil {
		return nil, err
	}
	b.charges = &lines
	return lines, nil
}

// chargebackTables reports, once per workbook, whether the source has the
// chargeback tables (migration 0012).
func (b *builder) chargebackTables() (bool, error) {
	if b.hasAllocation == nil {
		has, err := allocation.HasRecords(b.ctx, b.src)
		if err != nil {
			return false, err
		}
		b.hasAllocation = &has
	}
	return *b.hasAllocation, nil
}

// noCostCentres stands for allocation_cost_centres in a source without it:
// the budget scopes of cost centres are then empty.
const noCostCentres = `SELECT CAST(NULL AS UUID) AS close_id, 0 AS position, '' AS cost_centre, '' AS owner, '' AS project WHERE false`

// lineMoney is a line's figure as the sheets write money.
func lineMoney(d sql.Null[tally.Decimal]) money { return money{dec: d.V, valid: d.Valid} }

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
	foot := b.newFoot(7)
	for _, c := range allocation.Totals(lines) {
		cells := []cell{b.wrapped(c.CostCentre), b.txt(c.Currency)}
		l := b.currencyLine(foot, c.Currency, 1)
		for _, d := range []tally.Decimal{c.Direct, c.Shared, c.Total, c.Billed} {
			m := money{dec: d, valid: true}
			v, err := b.amount(m, c.Currency)
			if err != nil {
				return err
			}
			l.amount(len(cells), c.Currency, m)
			cells = append(cells, v)
		}
		if err := t.add(append(cells, b.wrapped(strings.Join(c.Methods, "; ")))...); err != nil {
			return err
		}
		sums[c.Currency] = sums[c.Currency].Add(c.Total)
	}
	if err := t.finish(""); err != nil {
		return err
	}
	last, err := foot.write(t)
	if err != nil {
		return err
	}
	row := last + 2
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
		if n := l.Version + ": " + l.Note; l.Note != "" && !slices.Contains(notes, n) {
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
		if !l.Shared() {
			continue
		}
		v, err := b.amount(lineMoney(l.Amount), l.Currency)
		if err != nil {
			return err
		}
		if err := lt.add(b.wrapped(l.CostCentre), b.txt(l.Currency), v, b.ratio(lineMoney(l.Ratio)), b.txt(l.Method), b.txt(l.PaidAs), b.wrapped(origin(l))); err != nil {
			return err
		}
	}
	return lt.finish("No shared cost this month: every charge went to its project's cost centre or to Unallocated.")
}

// origin says where a shared line comes from and, when the rule's method
// fell back, why.
func origin(l chargeLine) string {
	project := l.Project
	if project == "" {
		project = "(no project)"
	}
	s := l.Version + "; " + project + ", " + l.Meter
	if l.Note != "" {
		s += " (" + l.Note + ")"
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
