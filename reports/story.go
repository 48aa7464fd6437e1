package reports

import (
	"database/sql"
	"fmt"
	"math/big"
	"slices"
	"time"

	"github.com/xuri/excelize/v2"

	"github.com/tally-dev/tally"
)

// The Summary's story of the month, what a controller reads first: per
// currency the month against the previous one and the same month a year
// ago, the last 13 months and the month by project as charts, the largest
// movers, the budgets' standing. Every figure comes from the workbook's
// own source (the same snapshot as every sheet), exact, per currency, and
// says which months and basis it stands on.

// storyMonth is one month of summary_months: its usage value per currency
// and how it was loaded.
type storyMonth struct {
	at          time.Time
	windows     int64
	first, last sql.NullTime // the fetch windows' reach; last is exclusive
	cost        map[string]money
	currencies  []string // in order
	hasRows     bool
}

// loaded reports whether anything of the month was loaded: a fetch window
// overlapping it, or rows.
func (m *storyMonth) loaded() bool { return m.windows > 0 || m.hasRows }

// value is the month's usage value in currency: 0 when loaded without
// usage in it, invalid when not loaded (or not priced).
func (m *storyMonth) value(currency string) money {
	if c, ok := m.cost[currency]; ok {
		return c
	}
	if m.loaded() {
		return money{dec: tally.MustDecimal("0"), valid: true}
	}
	return money{}
}

// howLoaded says how the month's figures were loaded, for its basis line
// and the months table.
func (m *storyMonth) howLoaded() string {
	switch {
	case !m.loaded():
		return "not loaded"
	case m.windows == 0:
		return "as loaded: its rows, no fetch window recorded"
	}
	end := m.at.AddDate(0, 1, 0)
	if !m.first.Time.After(m.at) && !m.last.Time.Before(end) {
		return "as loaded: fetch windows cover the whole month"
	}
	from, to := m.first.Time, m.last.Time
	if from.Before(m.at) {
		from = m.at
	}
	if to.After(end) {
		to = end
	}
	return fmt.Sprintf("as loaded, partly: fetch windows cover %s to %s", from.Format(tally.DateLayout), to.AddDate(0, 0, -1).Format(tally.DateLayout))
}

// storyMonths reads the 13 months ending with the report month, oldest
// first.
func (b *builder) storyMonths() ([]*storyMonth, error) {
	var out []*storyMonth
	err := b.each("summary_months", func(r *sql.Rows) error {
		var (
			at          time.Time
			windows     int64
			first, last sql.NullTime
			currency    sql.NullString
			rows        sql.NullInt64
			cost        money
		)
		if err := r.Scan(&at, &windows, &first, &last, &currency, &rows, &cost); err != nil {
			return err
		}
		at = at.UTC()
		if len(out) == 0 || !out[len(out)-1].at.Equal(at) {
			out = append(out, &storyMonth{at: at, windows: windows, first: first, last: last, cost: map[string]money{}})
		}
		m := out[len(out)-1]
		if currency.Valid {
			m.hasRows = true
			m.cost[currency.String] = cost
			m.currencies = append(m.currencies, currency.String)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(out) != 13 {
		return nil, fmt.Errorf("summary_months: %d months, want 13", len(out))
	}
	return out, nil
}

// story writes the Summary's story from its current row on.
func (s *summaryWriter) story() error {
	b := s.b
	months, err := b.storyMonths()
	if err != nil {
		return err
	}
	this, prev, yearAgo := months[12], months[11], months[0]
	if err := s.glance(this, prev, yearAgo); err != nil {
		return err
	}
	// The charts go here, a band a currency (the trend on the left, the
	// projects on the right), drawn from the tables below them once their
	// rows are known.
	s.row++
	band := s.row
	s.row += len(b.currencies) * chartBandRows
	if err := s.movers(prev); err != nil {
		return err
	}
	if err := s.budgetStanding(); err != nil {
		return err
	}
	trend, err := s.monthsTable(months)
	if err != nil {
		return err
	}
	projects, err := s.projects()
	if err != nil {
		return err
	}
	if err := s.bandBreaks(band); err != nil {
		return err
	}
	for i, c := range b.currencies {
		row := band + i*chartBandRows
		if err := s.trendChart(row, c, trend); err != nil {
			return err
		}
		if p, ok := projects[c]; ok {
			if err := s.projectChart(row, c, p); err != nil {
				return err
			}
		}
	}
	return nil
}

// A chart band is chartBandRows rows: a chart of storyChartHeight pixels,
// at 17 a row as LibreOffice draws the default row, and a row to spare;
// lower than Daily's charts, so that two bands fit page one under the
// glance and the whole Summary stays a few pages of the binder. The trend
// chart spans columns A to C, the project chart D to G (summaryColumns),
// seven pixels to a character.
const (
	storyChartHeight   = 195
	chartBandRows      = 12
	trendChartWidth    = 600
	projectChartWidth  = 410
	projectChartColumn = "D"
)

// bandBreaks starts a chart band on a new page where the band, from row
// on, would not fit under what precedes it: LibreOffice prints a chart
// that crosses a page's end over the footer and cuts it in two. Rows are
// counted as Excel draws them (the default 15 points, or the height set),
// higher than LibreOffice draws a default row, and a band as its rows, so
// that a band counted to fit fits.
func (s *summaryWriter) bandBreaks(band int) error {
	b := s.b
	scale, _ := printScale(b.printWidths[sheetSummary])
	page := summaryPageHeight * 100 / float64(scale)
	used := 0.0
	for r := 1; r < band; r++ {
		h, err := b.f.GetRowHeight(sheetSummary, r)
		if err != nil {
			return err
		}
		if used+h > page {
			used = 0
		}
		used += h
	}
	for i := range b.currencies {
		if used+chartBandHeight > page {
			// The new page starts a row above the band, as on the Budgets
			// sheet: a break right above a chart leaves LibreOffice
			// drawing it on the page before too.
			if err := b.f.InsertPageBreak(sheetSummary, fmt.Sprintf("A%d", band+i*chartBandRows-1)); err != nil {
				return err
			}
			used = 15 // the row above the band
		}
		used += chartBandHeight
	}
	return nil
}

// summaryPageHeight is the points a page prints at 100 %: A4 landscape,
// shorter than Letter's, less printSetup's top and bottom margins (0.5
// and 0.6 inches). chartBandHeight is a band's rows at Excel's default
// height.
const (
	summaryPageHeight = 595 - (0.5+0.6)*72
	chartBandHeight   = chartBandRows * 15
)

// glance writes the month at a glance: one row a currency, the month, the
// previous month and the change, the same month a year ago and the change
// on it, then the basis of each.
func (s *summaryWriter) glance(this, prev, yearAgo *storyMonth) error {
	b := s.b
	if err := s.section(glanceSection); err != nil {
		return err
	}
	m := func(x *storyMonth) string { return x.at.Format(monthLayout) }
	// Headers of one line each (the basis lines name the months): the
	// Summary is a few pages of the binder.
	if err := s.header("Usage value in", "This month, "+m(this), "Previous month, "+m(prev), "Change", "Change %",
		"A year ago", "Change % y/y"); err != nil {
		return err
	}
	var currencies []string
	for _, x := range []*storyMonth{this, prev, yearAgo} {
		currencies = append(currencies, x.currencies...)
	}
	slices.Sort(currencies)
	currencies = slices.Compact(currencies)
	if len(currencies) == 0 {
		if err := s.put(b.txt(emptyPeriod)); err != nil {
			return err
		}
	}
	for _, c := range currencies {
		now := this.value(c)
		cells := []cell{b.txt(c)}
		x, err := b.value(now, c)
		if err != nil {
			return err
		}
		cells = append(cells, x)
		before, err := b.compared(prev, c)
		if err != nil {
			return err
		}
		change, err := b.change(now, prev.value(c), c)
		if err != nil {
			return err
		}
		cells = append(cells, before)
		cells = append(cells, change...)
		ago, err := b.compared(yearAgo, c)
		if err != nil {
			return err
		}
		onYear, err := b.change(now, yearAgo.value(c), c)
		if err != nil {
			return err
		}
		cells = append(cells, ago, onYear[1])
		if err := s.put(cells...); err != nil {
			return err
		}
	}
	basis := fmt.Sprintf("basis %s, granularity %s", b.p.Basis, b.p.Granularity)
	return s.lines([][]cell{
		{b.label("This month's figures"), b.txt(fmt.Sprintf("%s, %s, %s", m(this), basis, this.howLoaded()))},
		{b.label("Previous month's figures"), b.txt(fmt.Sprintf("%s, %s, %s", m(prev), basis, prev.howLoaded()))},
		{b.label("A year ago's figures"), b.txt(fmt.Sprintf("%s, %s, %s", m(yearAgo), basis, yearAgo.howLoaded()))},
	})
}

const glanceSection = "The month at a glance (usage value per currency, never added across currencies)"

// notLoaded is what a figure of a month never loaded says.
const notLoaded = "not loaded"

// compared is month x's value in currency, or "not loaded".
func (b *builder) compared(x *storyMonth, currency string) (cell, error) {
	if !x.loaded() {
		return cell{notLoaded, b.st.notPriced}, nil
	}
	return b.value(x.value(currency), currency)
}

// change is now less before, in currency and as a percentage of before:
// blank when either is not there, "new" for a percentage of nothing.
func (b *builder) change(now, before money, currency string) ([]cell, error) {
	if !now.valid || !before.valid {
		return []cell{{nil, b.st.text}, {nil, b.st.text}}, nil
	}
	back, err := before.dec.Scaled(before.dec.Scale())
	if err != nil {
		return nil, err
	}
	d := money{dec: now.dec.Add(tally.NewDecimal(back.Neg(back), before.dec.Scale())), valid: true}
	amount, err := b.amount(d, currency)
	if err != nil {
		return nil, err
	}
	if before.dec.Sign() == 0 {
		if d.dec.Sign() == 0 {
			return []cell{amount, {nil, b.st.percent}}, nil
		}
		return []cell{amount, {"new", b.st.notPriced}}, nil
	}
	f, _ := new(big.Rat).Quo(d.dec.Rat(), new(big.Rat).Abs(before.dec.Rat())).Float64()
	return []cell{amount, {f, b.st.percent}}, nil
}

// movers writes the five largest movers per currency against the previous
// month.
func (s *summaryWriter) movers(prev *storyMonth) error {
	b := s.b
	if err := s.section("Largest movers against the previous month (project and meter, five per currency)"); err != nil {
		return err
	}
	if !prev.loaded() {
		return s.put(b.txt(fmt.Sprintf("None: the previous month, %s, is not loaded (basis %s, granularity %s).",
			prev.at.Format(monthLayout), b.p.Basis, b.p.Granularity)))
	}
	if err := s.header("Project", "Meter", "Currency", "In "+prev.at.Format(monthLayout),
		"In "+b.p.Month.Format(monthLayout), "Change", "Change %"); err != nil {
		return err
	}
	n := 0
	err := b.each("summary_movers", func(r *sql.Rows) error {
		var (
			currency, meter      string
			rank                 int64
			project              sql.NullString
			before, now, changed money
		)
		if err := r.Scan(&currency, &rank, &project, &meter, &before, &now, &changed); err != nil {
			return err
		}
		cells := []cell{b.txt(orNone(project)), b.txt(meter), b.txt(currency)}
		for _, m := range []money{before, now} {
			c, err := b.amount(m, currency)
			if err != nil {
				return err
			}
			cells = append(cells, c)
		}
		change, err := b.change(now, before, currency)
		if err != nil {
			return err
		}
		n++
		return s.put(append(cells, change...)...)
	})
	if err != nil {
		return err
	}
	if n == 0 {
		return s.put(b.txt("None: no project's meter changed in value."))
	}
	return nil
}

// budgetStanding writes each budget's standing as the Budgets and forecast
// sheet computed it (budgetStatus): on track, at risk (the forecast passes
// the amount) or over (the actual does).
func (s *summaryWriter) budgetStanding() error {
	b := s.b
	if err := s.section("Budgets, basis usage (over: the actual passes the amount; at risk: the month-end forecast does)"); err != nil {
		return err
	}
	if len(b.opts.Budgets) == 0 {
		return s.put(b.txt("No budget is configured (config budgets)."))
	}
	if err := s.header("Budget", "Scope", "Currency", "Budget amount", b.budgetActualHead, "Forecast", "Status"); err != nil {
		return err
	}
	for _, st := range b.budgetStatus {
		cells := []cell{b.txt(st.budget.Name), b.txt(st.budget.ScopeText), b.txt(st.budget.Currency)}
		for _, m := range []money{{dec: st.budget.Amount, valid: true}, st.actual, st.forecast} {
			c, err := b.amount(m, st.budget.Currency)
			if err != nil {
				return err
			}
			cells = append(cells, c)
		}
		if err := s.put(append(cells, b.txt(st.standing()))...); err != nil {
			return err
		}
	}
	return nil
}

// budgetStatus is one budget's figures as the Budgets and forecast sheet
// shows them, kept for the Summary.
type budgetStatus struct {
	budget           Budget
	actual, forecast money // invalid when the scope has no usage this month
}

// standing words the budget's status.
func (st budgetStatus) standing() string {
	amount := st.budget.Amount
	switch {
	case st.actual.valid && st.actual.dec.Cmp(amount) > 0:
		return "over"
	case st.forecast.valid && st.forecast.dec.Cmp(amount) > 0:
		return "at risk"
	}
	return "on track"
}

// trendRows is where the months table's figures are: its month column and
// a value column per currency, first to last row.
type trendRows struct {
	first, last int
	column      map[string]string
	negative    map[string]bool // a month of the currency is below zero
	from, to    time.Time
}

// monthsTable writes the last 13 months' usage value per currency, the
// trend chart's figures, with how each month was loaded.
func (s *summaryWriter) monthsTable(months []*storyMonth) (trendRows, error) {
	b := s.b
	t := trendRows{column: map[string]string{}, negative: map[string]bool{}, from: months[0].at, to: months[len(months)-1].at}
	if err := s.section(fmt.Sprintf("Usage value by month, the last 13 months (basis %s, granularity %s, as loaded)", b.p.Basis, b.p.Granularity)); err != nil {
		return t, err
	}
	var currencies []string
	for _, m := range months {
		currencies = append(currencies, m.currencies...)
	}
	slices.Sort(currencies)
	currencies = slices.Compact(currencies)
	head := []string{"Month"}
	for i, c := range currencies {
		col, err := excelize.ColumnNumberToName(i + 2)
		if err != nil {
			return t, err
		}
		t.column[c] = col
		head = append(head, "Usage value, "+c)
	}
	if err := s.header(append(head, "Loaded")...); err != nil {
		return t, err
	}
	t.first = s.row
	for _, m := range months {
		cells := []cell{{m.at, b.st.month}}
		for _, c := range currencies {
			v := m.value(c)
			if !m.loaded() {
				cells = append(cells, cell{nil, b.st.text})
				continue
			}
			x, err := b.value(v, c)
			if err != nil {
				return t, err
			}
			cells = append(cells, x)
			if v.valid && v.dec.Sign() < 0 {
				t.negative[c] = true
			}
		}
		if err := s.put(append(cells, b.txt(m.howLoaded()))...); err != nil {
			return t, err
		}
	}
	t.last = s.row - 1
	return t, nil
}

// projectRows is where a currency's projects table is, and its chart's
// value axis minimum: zero, so bars compare by length, unless a project's
// value is below it.
type projectRows struct {
	first, last int
	min         *float64
}

// projects writes, per currency, the month's largest projects (the
// project chart's figures) and returns where each currency's are.
func (s *summaryWriter) projects() (map[string]projectRows, error) {
	b := s.b
	out := map[string]projectRows{}
	type line struct {
		name string
		cost money
	}
	lines := map[string][]line{}
	totals := map[string]money{}
	err := b.each("summary_projects", func(r *sql.Rows) error {
		var (
			currency string
			rank     int64
			others   bool
			project  sql.NullString
			projects int64
			cost     money
		)
		if err := r.Scan(&currency, &rank, &others, &project, &projects, &cost); err != nil {
			return err
		}
		name := orNone(project)
		if others {
			name = fmt.Sprintf("%d other projects", projects)
		}
		lines[currency] = append(lines[currency], line{name: name, cost: cost})
		if cost.valid {
			t := totals[currency]
			if !t.valid {
				t = money{dec: tally.MustDecimal("0"), valid: true}
			}
			t.dec = t.dec.Add(cost.dec)
			totals[currency] = t
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(lines) == 0 {
		return out, nil
	}
	// One table, a currency's lines together (each chart reads its own).
	if err := s.section(fmt.Sprintf("Usage value by project, %s (the five largest per currency, then the rest; share of the currency's month)", b.p.Month.Format(monthLayout))); err != nil {
		return nil, err
	}
	if err := s.header("Project", "Currency", "Usage value", "Share"); err != nil {
		return nil, err
	}
	for _, c := range b.currencies {
		ls := lines[c]
		if len(ls) == 0 {
			continue
		}
		first := s.row
		min := new(float64)
		for _, l := range ls {
			if l.cost.valid && l.cost.dec.Sign() < 0 {
				min = nil
			}
			v, err := b.value(l.cost, c)
			if err != nil {
				return nil, err
			}
			share := cell{nil, b.st.percent}
			if t, ok := totals[c]; ok {
				share = b.share(l.cost, t.dec)
			}
			if err := s.put(b.txt(l.name), b.txt(c), v, share); err != nil {
				return nil, err
			}
		}
		out[c] = projectRows{first: first, last: s.row - 1, min: min}
	}
	return out, nil
}

// trendChart draws currency's last 13 months at row: a line chart whose
// categories are the months table's months, each labelled by its month's
// short name under its point (13 fit the chart's width, unlike Daily's 31
// days), the value axis from zero unless a month is below it.
func (s *summaryWriter) trendChart(row int, currency string, t trendRows) error {
	b := s.b
	col, ok := t.column[currency]
	if !ok {
		return nil
	}
	ref := func(c string) string {
		return fmt.Sprintf("'%s'!$%s$%d:$%s$%d", sheetSummary, c, t.first, c, t.last)
	}
	var yMin *float64
	if !t.negative[currency] {
		yMin = new(float64)
	}
	return b.f.AddChart(sheetSummary, fmt.Sprintf("A%d", row), &excelize.Chart{
		Type: excelize.Line,
		Series: []excelize.ChartSeries{{
			Name:       fmt.Sprintf("'%s'!$%s$%d", sheetSummary, col, t.first-1),
			Categories: ref("A"),
			Values:     ref(col),
			Marker:     excelize.ChartMarker{Symbol: "circle", Size: 5},
			Line:       dayLine,
		}},
		Title:  chartTitle(fmt.Sprintf("Usage value by month, %s, %s to %s", currency, t.from.Format(monthLayout), t.to.Format(monthLayout))),
		Legend: excelize.ChartLegend{Position: "none"},
		XAxis: excelize.ChartAxis{Font: excelize.Font{Size: chartFontSize, Color: chartTextColor},
			NumFmt: excelize.ChartNumFmt{CustomNumFmt: "mmm"}},
		YAxis:     moneyAxis(currency, yMin),
		Dimension: excelize.ChartDimension{Width: trendChartWidth, Height: storyChartHeight},
	})
}

// projectChart draws currency's largest projects at row, beside its trend:
// bars, the largest on top.
func (s *summaryWriter) projectChart(row int, currency string, p projectRows) error {
	b := s.b
	ref := func(c string) string {
		return fmt.Sprintf("'%s'!$%s$%d:$%s$%d", sheetSummary, c, p.first, c, p.last)
	}
	return b.f.AddChart(sheetSummary, fmt.Sprintf("%s%d", projectChartColumn, row), &excelize.Chart{
		Type: excelize.Bar,
		Series: []excelize.ChartSeries{{
			Name:       fmt.Sprintf("'%s'!$B$%d", sheetSummary, p.first),
			Categories: ref("A"),
			Values:     ref("C"),
		}},
		Title:     chartTitle(fmt.Sprintf("Usage value by project, %s, %s", currency, b.p.Month.Format(monthLayout))),
		Legend:    excelize.ChartLegend{Position: "none"},
		XAxis:     excelize.ChartAxis{Font: excelize.Font{Size: chartFontSize, Color: chartTextColor}, ReverseOrder: true},
		YAxis:     moneyAxis(currency, p.min),
		Dimension: excelize.ChartDimension{Width: projectChartWidth, Height: storyChartHeight},
	})
}
