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
	b.printWidth(sheetDaily, columnsWidth(cols)+chartWidthChars)
	last := len(days) + 1
	at := make([]time.Time, len(days))
	for i, d := range days {
		at[i] = d.at
	}
	labels, err := b.dayLabels(sheetDaily, len(cols)+1, 2, at)
	if err != nil {
		return err
	}
	for i, c := range b.currencies {
		col, err := excelize.ColumnNumberToName(i + 2)
		if err != nil {
			return err
		}
		// The value axis starts at zero, so a small change does not look
		// like a cliff; only a day valued below zero (a correction) lets
		// the axis go below.
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
		ref := func(from, to int) string {
			return fmt.Sprintf("'%s'!$%s$%d:$%s$%d", sheetDaily, col, from, col, to)
		}
		err = b.f.AddChart(sheetDaily, fmt.Sprintf("%s%d", chartCol, 2+i*17), &excelize.Chart{
			Type: excelize.Line,
			Series: []excelize.ChartSeries{{
				Name:       fmt.Sprintf("'%s'!$%s$1", sheetDaily, col),
				Categories: labels,
				Values:     ref(2, last),
				Marker:     excelize.ChartMarker{Symbol: "circle", Size: 4},
			}},
			Title:     chartTitle("Usage value per day, " + c),
			Legend:    excelize.ChartLegend{Position: "none"},
			Dimension: excelize.ChartDimension{Width: chartWidth, Height: chartHeight},
			XAxis:     b.dayAxis(),
			YAxis:     moneyAxis(yMin),
		})
		if err != nil {
			return fmt.Errorf("chart %s: %w", c, err)
		}
	}
	return nil
}

// Charts are chartWidth × chartHeight pixels. A chart is anchored to the
// columns it spans, seven pixels to a character of column width, and
// prints as wide as those columns: chartWidthChars.
const (
	chartWidth      = 480
	chartHeight     = 300
	chartWidthChars = chartWidth / 7.0
	chartFontSize   = 10 // 7 pt at the smallest print scale
	chartTextColor  = "333333"
)

func chartTitle(text string) excelize.ChartTitle {
	return excelize.ChartTitle{Paragraph: []excelize.RichTextRun{{Text: text,
		Font: &excelize.Font{Size: chartFontSize + 2, Bold: true, Color: chartTextColor}}}}
}

// dayAxis is a chart's axis of days, labelled by dayLabels.
func (b *builder) dayAxis() excelize.ChartAxis {
	return excelize.ChartAxis{Font: excelize.Font{Size: chartFontSize, Color: chartTextColor}}
}

// dayLabels writes a chart's day labels in column col of sheet from row
// first on, one a day, and hides the column; it returns their reference
// for the chart's categories. Only the first day and each seventh after it
// is labelled ("1 Oct", "8 Oct", …), the others are blank: a month of
// dates does not fit side by side under a printed chart, and LibreOffice
// prints every label it is given, whatever label skip the chart asks for.
func (b *builder) dayLabels(sheet string, col, first int, days []time.Time) (string, error) {
	name, err := excelize.ColumnNumberToName(col)
	if err != nil {
		return "", err
	}
	for i, d := range days {
		label := ""
		if i%7 == 0 {
			label = d.Format("2 Jan")
		}
		if err := b.put(sheet, col, first+i, cell{label, b.st.text}); err != nil {
			return "", err
		}
	}
	if err := b.f.SetColVisible(sheet, name, false); err != nil {
		return "", err
	}
	return fmt.Sprintf("'%s'!$%s$%d:$%s$%d", sheet, name, first, name, first+len(days)-1), nil
}

// moneyAxis is a chart's value axis: amounts, gridlines, from min when set.
func moneyAxis(min *float64) excelize.ChartAxis {
	return excelize.ChartAxis{MajorGridLines: true, NumFmt: excelize.ChartNumFmt{CustomNumFmt: fmtMoney},
		Minimum: min, Font: excelize.Font{Size: chartFontSize, Color: chartTextColor}}
}
