package reports

import (
	"database/sql"
	"fmt"
	"math/big"
	"time"

	"github.com/xuri/excelize/v2"

	"github.com/tally-dev/tally"
)

// Budget is one budget the workbook shows (the config's budgets).
type Budget struct {
	Name      string
	ScopeKind string // all, project, payment_method or family
	Scope     string // "" for all
	ScopeText string // as written in the config: all or kind:name
	Currency  string
	Amount    tally.Decimal
}

const sheetBudgets = "Budgets and forecast"

// budgetDay is one day of a budget's month.
type budgetDay struct {
	at       time.Time
	forecast bool
	cost     money
}

// budgets fills the Budgets and forecast sheet: a row per budget (amount,
// actual, forecast and their shares of the amount), then per budget a
// table of the month's days, cumulative, and a chart of cumulative actual
// against forecast against the budget. Figures are on basis usage, as
// budgets are.
func (b *builder) budgets() error {
	row := 2 + len(b.opts.Budgets) + 3
	// Every scope's month is computed in one query, once, whatever the
	// number of budgets.
	type scopeKey struct{ kind, scope, currency string }
	type scopeMonth struct {
		days    []budgetDay
		asOf    sql.NullTime
		actual  money
		through tally.DataThrough
	}
	months := map[scopeKey]*scopeMonth{}
	err := b.each("budget", func(r *sql.Rows) error {
		var k scopeKey
		var d budgetDay
		var kind string
		var asOf, last, fetched sql.NullTime
		var actual money
		if err := r.Scan(&k.kind, &k.scope, &k.currency, &d.at, &kind, &d.cost, &asOf, &actual, &last, &fetched); err != nil {
			return err
		}
		m := months[k]
		if m == nil {
			m = &scopeMonth{asOf: asOf, actual: actual,
				through: tally.DataThrough{AsOf: asOf.Time.UTC(), LastUsageDay: last.Time.UTC()}}
			if fetched.Valid {
				m.through.LastFetchedDay = fetched.Time.UTC()
			}
			months[k] = m
		}
		d.forecast = kind == "forecast"
		m.days = append(m.days, d)
		return nil
	})
	if err != nil {
		return err
	}
	// The labels say what the figures hold: the last day holding usage,
	// and whether it is complete. While usage arrives, the latest day is
	// partial (its usage is still coming in) and the actual figure
	// includes it. When the interface stops reporting, the last day with
	// usage is complete (later days were fetched) and the days after it
	// held none: the sheet says so, rather than call a week-old day
	// partial. A month that is over holds only complete days: its figure
	// is the actual cost.
	var through sql.NullTime
	var data tally.DataThrough
	for _, m := range months { // as_of and the last days are the data's, the same in every scope
		if m.asOf.Valid {
			through = sql.NullTime{Time: m.through.LastUsageDay, Valid: true}
			data = m.through
		}
	}
	over := through.Valid && !data.AsOf.AddDate(0, 0, 1).Before(b.p.end())
	actualHead, throughHead := "Actual so far", "Data through (last day partial)"
	if data.Complete() {
		throughHead = "Data through (complete)"
	}
	if over {
		actualHead = "Actual"
		if !through.Time.Before(b.p.end().AddDate(0, 0, -1)) {
			throughHead, through.Time = "Data through", b.p.end().AddDate(0, 0, -1)
		}
	}
	b.budgetActualHead = actualHead
	t, err := b.newTable(sheetBudgets, "Budgets", 1, []column{
		{"Budget", 18}, {"Scope", 24}, {"Currency", 16}, {"Budget amount", 16}, {actualHead, 16},
		{"Actual %", 10}, {"Forecast month end", 18}, {"Forecast %", 11}, {throughHead, 12},
	})
	if err != nil {
		return err
	}
	for i, bu := range b.opts.Budgets {
		var days []budgetDay
		var actual money
		dataThrough := sql.NullTime{}
		if m := months[scopeKey{bu.ScopeKind, bu.Scope, bu.Currency}]; m != nil {
			days, actual, dataThrough = m.days, m.actual, through
		}
		forecast := money{dec: tally.MustDecimal("0"), valid: true}
		for _, d := range days {
			forecast.dec = forecast.dec.Add(d.cost.dec)
		}
		if len(days) == 0 {
			forecast, actual = money{}, money{}
		}
		amount := money{dec: bu.Amount, valid: true}
		cells := []cell{b.txt(bu.Name), b.txt(bu.ScopeText), b.txt(bu.Currency)}
		for _, m := range []money{amount, actual} {
			c, err := b.amount(m, bu.Currency)
			if err != nil {
				return err
			}
			cells = append(cells, c)
		}
		cells = append(cells, b.share(actual, bu.Amount))
		c, err := b.amount(forecast, bu.Currency)
		if err != nil {
			return err
		}
		cells = append(cells, c, b.share(forecast, bu.Amount), b.day(dataThrough))
		b.budgetStatus = append(b.budgetStatus, budgetStatus{budget: bu, actual: actual, forecast: forecast})
		if err := t.add(cells...); err != nil {
			return err
		}
		if len(days) > 0 {
			// A budget's days and chart are a page high: each starts a page
			// of its own rather than break across two.
			if i > 0 {
				if err := b.f.InsertPageBreak(sheetBudgets, fmt.Sprintf("A%d", row-1)); err != nil {
					return err
				}
			}
			if row, err = b.budgetChart(i, bu, days, row); err != nil {
				return err
			}
		}
	}
	if err := t.finish(""); err != nil {
		return err
	}
	note := "Actual and forecast are the usage value on the day the usage happened (basis usage), as the budgets count it. " +
		"Forecast: the month so far plus each remaining day at the mean cost of the same weekday over the 28 days before the data's last complete day."
	switch {
	case through.Valid && !over && !data.Complete():
		note += fmt.Sprintf(" Actual so far runs through %s, whose usage is still coming in: that day is partial, and forecast at no less than its cost so far.", through.Time.Format(tally.DateLayout))
	case over && !through.Time.Before(b.p.end().AddDate(0, 0, -1)):
		note += " The month is over: actual is what every day of it cost."
	case through.Valid:
		note += fmt.Sprintf(" Usage runs through %s, and that day is complete.", data.LastUsageDay.Format(tally.DateLayout))
		if first, last, ok := data.Empty(); ok {
			note += fmt.Sprintf(" The days from %s to %s were fetched and held no usage: they count as 0 in the actual cost and the forecast's baseline, not as days still to come.",
				first.Format(tally.DateLayout), last.Format(tally.DateLayout))
		}
		if over {
			note += " The month is over."
		}
	}
	return b.wrapAcross(sheetBudgets, 2+len(b.opts.Budgets)+1, 9, note)
}

// share is m as a fraction of amount, shown as a percentage; blank when m
// is.
func (b *builder) share(m money, amount tally.Decimal) cell {
	if !m.valid || amount.Sign() == 0 {
		return cell{nil, b.st.percent}
	}
	f, _ := new(big.Rat).Quo(m.dec.Rat(), amount.Rat()).Float64()
	return cell{f, b.st.percent}
}

// budgetChart writes budget i's days from row on (Day, Actual, Forecast,
// Budget, cumulative) with its chart beside them, and returns the row
// after.
func (b *builder) budgetChart(i int, bu Budget, days []budgetDay, row int) (int, error) {
	if err := b.put(sheetBudgets, 1, row, cell{fmt.Sprintf("%s (%s, %s), cumulative by day", bu.Name, bu.ScopeText, bu.Currency), b.st.section}); err != nil {
		return 0, err
	}
	t, err := b.newTable(sheetBudgets, fmt.Sprintf("BudgetDays%d", i+1), row+1, []column{
		{"Day", 12}, {"Actual", 16}, {"Forecast", 16}, {"Budget", 16},
	})
	if err != nil {
		return 0, err
	}
	style, err := b.st.moneyStyle(bu.Currency)
	if err != nil {
		return 0, err
	}
	sum := tally.MustDecimal("0")
	amount := bu.Amount.Float64()
	for j, d := range days {
		sum = sum.Add(d.cost.dec)
		actual, forecast := cell{nil, style}, cell{nil, style}
		if d.forecast {
			forecast = cell{sum.Float64(), style}
		} else {
			actual = cell{sum.Float64(), style}
			// The forecast line starts where the actual one ends.
			if j+1 < len(days) && days[j+1].forecast {
				forecast = actual
			}
		}
		if err := t.add(cell{d.at, b.st.date}, actual, forecast, cell{amount, style}); err != nil {
			return 0, err
		}
	}
	if err := t.finish(""); err != nil {
		return 0, err
	}
	first, last := row+2, row+1+len(days)
	ref := func(col string) string { return fmt.Sprintf("'%s'!$%s$%d:$%s$%d", sheetBudgets, col, first, col, last) }
	var series []excelize.ChartSeries
	for _, col := range []string{"B", "C", "D"} {
		series = append(series, excelize.ChartSeries{
			Name:       fmt.Sprintf("'%s'!$%s$%d", sheetBudgets, col, row+1),
			Categories: ref("A"),
			Values:     ref(col),
			Line:       dayLine,
		})
	}
	zero := 0.0
	// Beside the day table's four columns (Day, Actual, Forecast, Budget),
	// so the sheet prints one page wide.
	left := 0.0
	for _, col := range []string{"A", "B", "C", "D"} {
		w, err := b.f.GetColWidth(sheetBudgets, col)
		if err != nil {
			return 0, err
		}
		left += w
	}
	b.printWidth(sheetBudgets, left+chartWidthChars)
	b.printChart(sheetBudgets, row)
	err = b.f.AddChart(sheetBudgets, fmt.Sprintf("E%d", row), &excelize.Chart{
		Type:      dayChart,
		Series:    series,
		Title:     chartTitle(fmt.Sprintf("%s: cumulative cost against budget, %s", bu.Name, bu.Currency)),
		Legend:    excelize.ChartLegend{Position: "bottom", Font: &excelize.Font{Size: chartFontSize, Color: chartTextColor}},
		Dimension: excelize.ChartDimension{Width: chartWidth, Height: chartHeight},
		XAxis:     dayAxis(days[0].at, days[len(days)-1].at),
		YAxis:     moneyAxis(bu.Currency, &zero),
	})
	if err != nil {
		return 0, fmt.Errorf("chart %s: %w", bu.Name, err)
	}
	// The chart is 320 points high, about 17 rows: the next table starts
	// below both.
	return row + max(len(days)+4, 19), nil
}

// anomalies writes the Flags sheet's Anomalies section from row on: each
// cost anomaly of the month's days.
func (b *builder) anomalies(row int) error {
	if err := b.putRow(sheetFlags, row, cell{"Anomalies: a project's meter cost far more on a day than on the 28 days before (basis usage)", b.st.sectionWrap}); err != nil {
		return err
	}
	t, err := b.newTable(sheetFlags, "Anomalies", row+1, []column{
		{"Day", 12}, {"Project", 34}, {"Meter", 22}, {"Currency", 10}, {"Cost", 12}, {"Usual (median)", 12}, {"MADs", 8}, {"Excess", 16},
	})
	if err != nil {
		return err
	}
	err = b.each("anomalies", func(r *sql.Rows) error {
		var (
			day                  time.Time
			project, meter, cur  string
			cost, baseline, more money
			score                sql.NullFloat64
		)
		if err := r.Scan(&day, &project, &meter, &cur, &cost, &baseline, &more, &score); err != nil {
			return err
		}
		var amounts [3]cell
		for i, m := range []money{cost, baseline, more} {
			c, err := b.amount(m, cur)
			if err != nil {
				return err
			}
			amounts[i] = c
		}
		sc := cell{nil, b.st.quantity}
		if score.Valid {
			sc = cell{score.Float64, b.st.quantity}
		}
		return t.add(cell{day, b.st.date}, b.txt(project), b.txt(meter), b.txt(cur), amounts[0], amounts[1], sc, amounts[2])
	})
	if err != nil {
		return err
	}
	return t.finish("No cost anomaly on this month's days.")
}
