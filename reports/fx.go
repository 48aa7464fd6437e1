package reports

import (
	"fmt"

	"github.com/tally-dev/tally"
)

// convertedTitle heads the converted total: beside the figures per
// currency, never instead.
func (b *builder) convertedTitle() string {
	return fmt.Sprintf("In %s, the reporting currency: converted beside the figures per currency, never instead", b.opts.ReportingCurrency)
}

// convertedRows are the month's total per currency converted into the
// reporting currency (Options.ReportingCurrency), each with its rate and
// where the config gives it, then their sum: a header row, a row per
// currency and a Total row, five columns, the rate's source last. A currency without a rate for
// the month shows "no rate for USD in 2026-10" and the Total says so
// rather than add the others: never a guess. Nil without a reporting
// currency. The products are exact (rate × amount); only the cell is a
// double.
func (b *builder) convertedRows(totals []totalRow) ([][]cell, error) {
	to := b.opts.ReportingCurrency
	if to == "" {
		return nil, nil
	}
	month := b.p.Month.Format(monthLayout)
	// The source last, unwrapped: a column of another table's width
	// (By project's) cut "reports.fx_rates" in two; last, it runs on over
	// the empty cells to its right, on screen and on paper.
	header := []cell{{"Currency", b.st.header}, {"Total usage value", b.st.header},
		{"Rate (" + to + " per unit)", b.st.header}, {"In " + to, b.st.header}, {"Rate source", b.st.header}}
	out := [][]cell{header}
	sum, missing := tally.MustDecimal("0"), ""
	for _, t := range totals {
		value, err := b.value(t.split.total, t.currency)
		if err != nil {
			return nil, err
		}
		rate, source := tally.MustDecimal("1"), "the reporting currency"
		if t.currency != to {
			r, ok := b.opts.FXRates[month][t.currency]
			if !ok {
				why := fmt.Sprintf("no rate for %s in %s", t.currency, month)
				if missing == "" {
					missing = why
				}
				out = append(out, []cell{b.txt(t.currency), value, {nil, b.st.text}, b.txt(why), {nil, b.st.text}})
				continue
			}
			rate, source = r.Rate, r.Source
		}
		if !t.split.total.valid {
			if missing == "" {
				missing = fmt.Sprintf("%s %s", t.currency, NotPriced)
			}
			out = append(out, []cell{b.txt(t.currency), value, {rate.Float64(), b.st.quantity}, {NotPriced, b.st.notPriced}, b.txt(source)})
			continue
		}
		in := mulDecimal(t.split.total.dec, rate)
		sum = sum.Add(in)
		conv, err := b.amount(money{dec: in, valid: true}, to)
		if err != nil {
			return nil, err
		}
		out = append(out, []cell{b.txt(t.currency), value, {rate.Float64(), b.st.quantity}, conv, b.txt(source)})
	}
	total := []cell{{"Total in " + to, b.st.totalLabel}, {nil, b.st.totalLabel}, {nil, b.st.totalLabel}}
	if missing != "" {
		total = append(total, cell{"no total: " + missing, b.st.totalLabel})
	} else {
		style, err := b.st.moneyTotalStyle(to)
		if err != nil {
			return nil, err
		}
		total = append(total, cell{sum.Float64(), style})
	}
	return append(out, append(total, cell{nil, b.st.totalLabel})), nil
}

// mulDecimal is a × b, exactly.
func mulDecimal(a, b tally.Decimal) tally.Decimal {
	x, _ := a.Scaled(a.Scale()) // no error: its own scale
	y, _ := b.Scaled(b.Scale())
	return tally.NewDecimal(x.Mul(x, y), a.Scale()+b.Scale())
}

// converted writes the Summary's converted total, below the totals per
// currency, when a reporting currency is set.
func (s *summaryWriter) converted(totals []totalRow) error {
	rows, err := s.b.convertedRows(totals)
	if err != nil || rows == nil {
		return err
	}
	if err := s.section(s.b.convertedTitle()); err != nil {
		return err
	}
	for _, r := range rows {
		if err := s.put(r...); err != nil {
			return err
		}
	}
	return nil
}

// byProjectConverted writes By project's converted total, two rows below
// its totals per currency, when a reporting currency is set.
func (b *builder) byProjectConverted() error {
	rows, err := b.convertedRows(b.totals)
	if err != nil || rows == nil {
		return err
	}
	shown, err := b.f.GetRows(sheetProject)
	if err != nil {
		return err
	}
	row := len(shown) + 2
	if err := b.putRow(sheetProject, row, cell{b.convertedTitle(), b.st.section}); err != nil {
		return err
	}
	// A printed page never ends on the block's title, nor on its header.
	if b.printKeep == nil {
		b.printKeep = map[string][]int{}
	}
	b.printKeep[sheetProject] = append(b.printKeep[sheetProject], row, row+1)
	for _, r := range rows {
		row++
		if err := b.putRow(sheetProject, row, r...); err != nil {
			return err
		}
	}
	return nil
}
