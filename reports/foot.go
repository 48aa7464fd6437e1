package reports

import (
	"math/big"
	"sort"

	"github.com/tally-dev/tally"
)

// Totals that foot as shown. A breakdown (By project, By meter, Daily…)
// ends, below a blank row and outside its Excel table, with a bold Total
// row per currency: the exact sum of the rows, which is the Summary's
// figure. Every amount shows its currency's minor unit, rounded half away
// from zero as a spreadsheet rounds what it shows, while the cell keeps
// the exact amount, so a SUM or a pivot over the rows gets the exact
// total. Rounded figures need not add up to their rounded total: where
// they do not, a Rounding row above the Total row shows the difference
// (the total as shown less the figures as shown), so that the figures as
// shown, plus Rounding, add up to the total as shown, as finance foots a
// rounded schedule.

// foot gathers a table's total rows as its rows are added.
type foot struct {
	b        *builder
	width    int    // the table's columns
	labelCol int    // where "Total" goes: column A unless it holds a key of the rows
	word     string // the label's first word: "Total" unless set ("Subtotal")
	lines    map[string]*footLine
}

// footLine is one total row: per currency, or per closed month and
// currency, or one row whose every column is a currency of its own.
type footLine struct {
	suffix  string       // what the labels name: the currency
	fixed   map[int]cell // cells shown as they are (the currency)
	amounts map[int]*footSum
	counts  map[int]int64
}

// footSum is one column of a total row.
type footSum struct {
	currency string
	exact    tally.Decimal
	priced   bool     // some row's figure is not NULL
	value    bool     // NULL everywhere shows "not priced", not blank
	shown    *big.Int // the figures as shown, in minor units
	decimals int
}

func (b *builder) newFoot(width int) *foot {
	return &foot{b: b, width: width, lines: map[string]*footLine{}}
}

// line is the total row of key, labelled "Total " + suffix; fixed are its
// cells shown as they are.
func (f *foot) line(key, suffix string, fixed map[int]cell) *footLine {
	l, ok := f.lines[key]
	if !ok {
		l = &footLine{suffix: suffix, fixed: fixed, amounts: map[int]*footSum{}, counts: map[int]int64{}}
		f.lines[key] = l
	}
	return l
}

// amount adds a row's amount in currency to column col; NULL adds nothing.
func (l *footLine) amount(col int, currency string, m money) {
	s := l.sum(col, currency)
	if !m.valid {
		return
	}
	s.priced = true
	s.exact = s.exact.Add(m.dec)
	s.shown.Add(s.shown, roundedUnits(m.dec.Rat(), s.decimals))
}

// value adds a usage value: a column no row priced totals "not priced".
func (l *footLine) value(col int, currency string, m money) {
	l.sum(col, currency).value = true
	l.amount(col, currency, m)
}

func (l *footLine) count(col int, n int64) { l.counts[col] += n }

func (l *footLine) sum(col int, currency string) *footSum {
	s, ok := l.amounts[col]
	if !ok {
		s = &footSum{currency: currency, shown: new(big.Int), decimals: minorUnit(currency)}
		l.amounts[col] = s
	}
	return s
}

// write puts the total rows one blank row below t's last row, in the
// order of their keys: each line's Rounding row when its figures as shown
// do not add up, then its Total row. It returns the last row written
// (t's last row when there is no total).
func (f *foot) write(t *table) (int, error) { return f.writeBelow(t, t.row+1) }

// writeBelow is write with the rows below row: directly under t's last
// row for a subtotal (row t.row), one blank row below it for a total.
func (f *foot) writeBelow(t *table, row int) (int, error) {
	keys := make([]string, 0, len(f.lines))
	for k := range f.lines {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	b := f.b
	if len(keys) == 0 {
		return t.row, nil
	}
	for _, k := range keys {
		l := f.lines[k]
		rounding := make([]cell, f.width)
		total := make([]cell, f.width)
		for i := range total {
			total[i] = cell{nil, b.st.totalLabel}
			if c, ok := l.fixed[i]; ok {
				rounding[i] = c
				total[i] = cell{c.v, b.st.totalLabel}
			}
		}
		rounding[f.labelCol] = b.txt(joinLabel("Rounding", l.suffix))
		word := f.word
		if word == "" {
			word = "Total"
		}
		total[f.labelCol] = cell{joinLabel(word, l.suffix), b.st.totalLabel}
		for col, n := range l.counts {
			total[col] = cell{n, b.st.integerTotal}
		}
		needRounding := false
		cols := make([]int, 0, len(l.amounts))
		for col := range l.amounts {
			cols = append(cols, col)
		}
		sort.Ints(cols) // styles are created in column order: the same workbook every time
		for _, col := range cols {
			s := l.amounts[col]
			bold, err := b.st.moneyTotalStyle(s.currency)
			if err != nil {
				return 0, err
			}
			switch {
			case !s.priced && s.value:
				total[col] = cell{NotPriced, b.st.notPricedTotal}
				continue
			case !s.priced:
				total[col] = cell{nil, bold}
				continue
			}
			total[col] = cell{s.exact.Float64(), bold}
			diff := new(big.Int).Sub(roundedUnits(s.exact.Rat(), s.decimals), s.shown)
			if diff.Sign() == 0 {
				continue
			}
			needRounding = true
			plain, err := b.st.moneyStyle(s.currency)
			if err != nil {
				return 0, err
			}
			rounding[col] = cell{tally.NewDecimal(diff, s.decimals).Float64(), plain}
		}
		if needRounding {
			row++
			if err := b.putRow(t.sheet, row, rounding...); err != nil {
				return 0, err
			}
		}
		row++
		if err := b.putRow(t.sheet, row, total...); err != nil {
			return 0, err
		}
	}
	return row, nil
}

func joinLabel(word, suffix string) string {
	if suffix == "" {
		return word
	}
	return word + " " + suffix
}

// roundedUnits is r in units of 10^-d, rounded half away from zero, as a
// spreadsheet rounds what it shows.
func roundedUnits(r *big.Rat, d int) *big.Int {
	x := new(big.Rat).Mul(r, new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(d)), nil)))
	q, rem := new(big.Int).QuoRem(x.Num(), x.Denom(), new(big.Int))
	if new(big.Int).Mul(new(big.Int).Abs(rem), big.NewInt(2)).Cmp(x.Denom()) >= 0 {
		if x.Sign() < 0 {
			q.Sub(q, big.NewInt(1))
		} else {
			q.Add(q, big.NewInt(1))
		}
	}
	return q
}
