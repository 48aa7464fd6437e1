package reports

import (
	"database/sql"
	"fmt"
	"time"

	"github.com/xuri/excelize/v2"
)

// daily fills the Daily sheet: one row per day with usage, one column per
// currency (a currency with no usage that day shows 0), and a line chart
// per currency beside the table. Amounts in different currencies never
// share a chart axis.
func (b *builder) daily() error {
	type day struct {
		at   time.Time
		cost map[string]money
	}
	var days []*day
	err := b.each("daily", func(r *sql.Rows) error {
		var (
			at       time.Time
			currency string
			rows     int64
			cost     money
		)
		if err := r.Scan(&at, &currency, &rows, &cost); err != nil {
			return err
		}
		if len(days) == 0 || !days[len(days)-1].at.Equal(at) {
			days = append(days, &day{at: at, cost: map[string]money{}})
		}
		days[len(days)-1].cost[currency] = cost
		return nil
	})
	if err != nil {
		return err
	}
	cols := []column{{"Day", 12}}
	for _, c := range b.currencies {
		cols = append(cols, column{c, 16})
	}
	t, err := b.newTable(sheetDaily, "Daily", 1, cols)
	if err != nil {
		return err
	}
	zero := money{valid: true}
	for _, d := range days {
		cells := []cell{{d.at, b.st.date}}
		for _, c := range b.currencies {
			m, ok := d.cost[c]
			if !ok {
				m = zero
			}
			x, err := b.amount(m, c)
			if err != nil {
				return err
			}
			cells = append(cells, x)
		}
		if err := t.add(cells...); err != nil {
			return err
		}
	}
	if err := t.finish(emptyPeriod); err != nil {
		return err
	}
	if len(days) == 0 {
		return nil
	}
	chartCol, err := excelize.ColumnNumberToName(len(cols) + 2)
	if err != nil {
		return err
	}
	last := len(days) + 1
	for i, c := range b.currencies {
		col, err := excelize.ColumnNumberToName(i + 2)
		if err != nil {
			return err
		}
		// The value axis starts at zero, so a small change does not look
		// like a cliff; only a day valued below zero (a correction) lets
		// the axis go below. Dates are labelled weekly so they stay
		// readable in a month of days.
		var yMin *float64
		negative := false
		for _, d := range days {
			if m, ok := d.cost[c]; ok && m.valid && m.dec.Sign() < 0 {
				negative = true
			}
		}
		if !negative {
			yMin = new(float64)
		}
		skip := 0
		if len(days) > 14 {
			skip = 7
		}
		ref := func(from, to int) string {
			return fmt.Sprintf("'%s'!$%s$%d:$%s$%d", sheetDaily, col, from, col, to)
		}
		err = b.f.AddChart(sheetDaily, fmt.Sprintf("%s%d", chartCol, 2+i*18), &excelize.Chart{
			Type: excelize.Line,
			Series: []excelize.ChartSeries{{
				Name:       fmt.Sprintf("'%s'!$%s$1", sheetDaily, col),
				Categories: fmt.Sprintf("'%s'!$A$2:$A$%d", sheetDaily, last),
				Values:     ref(2, last),
				Marker:     excelize.ChartMarker{Symbol: "circle", Size: 4},
			}},
			Title:     excelize.ChartTitle{Paragraph: []excelize.RichTextRun{{Text: "Usage value per day, " + c}}},
			Legend:    excelize.ChartLegend{Position: "none"},
			Dimension: excelize.ChartDimension{Width: 640, Height: 320},
			XAxis:     excelize.ChartAxis{NumFmt: excelize.ChartNumFmt{CustomNumFmt: fmtDate}, TickLabelSkip: skip},
			YAxis:     excelize.ChartAxis{MajorGridLines: true, NumFmt: excelize.ChartNumFmt{CustomNumFmt: fmtMoney}, Minimum: yMin},
		})
		if err != nil {
			return fmt.Errorf("chart %s: %w", c, err)
		}
	}
	return nil
}
