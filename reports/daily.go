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
	// One total row: each currency's column totals in its own currency.
	totals := b.newFoot(len(cols))
	total := totals.line("", "", nil)
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
			total.amount(len(cells), c, m)
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
	if _, err := totals.write(t); err != nil {
		return err
	}
	chartCol, err := excelize.ColumnNumberToName(len(cols) + 2)
	if err != nil {
		return err
	}
	b.printWidth(sheetDaily, columnsWidth(cols)+defaultColumnWidth+chartWidthChars)
	last := len(days) + 1
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
		b.printChart(sheetDaily, 2+i*17)
		err = b.f.AddChart(sheetDaily, fmt.Sprintf("%s%d", chartCol, 2+i*17), &excelize.Chart{
			Type: dayChart,
			Series: []excelize.ChartSeries{{
				Name:       fmt.Sprintf("'%s'!$%s$1", sheetDaily, col),
				Categories: fmt.Sprintf("'%s'!$A$2:$A$%d", sheetDaily, last),
				Values:     ref(2, last),
				Marker:     excelize.ChartMarker{Symbol: "circle", Size: 4},
				Line:       dayLine,
			}},
			Title:     chartTitle("Usage value per day, " + c),
			Legend:    excelize.ChartLegend{Position: "none"},
			Dimension: excelize.ChartDimension{Width: chartWidth, Height: chartHeight},
			XAxis:     dayAxis(days[0].at, days[len(days)-1].at),
			YAxis:     moneyAxis(c, yMin),
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
	chartFontSize   = 11 // as the cells': 7.26 pt at the smallest print scale
	chartTextColor  = "333333"
	// defaultColumnWidth is an empty column's, as between Daily's table
	// and its charts.
	defaultColumnWidth = 9.14
)

func chartTitle(text string) excelize.ChartTitle {
	return excelize.ChartTitle{Paragraph: []excelize.RichTextRun{{Text: text,
		Font: &excelize.Font{Size: chartFontSize + 2, Bold: true, Color: chartTextColor}}}}
}

// dayChart is the chart type of amounts by day: a scatter chart, days on
// a value axis, which LibreOffice and Excel label at an interval that
// leaves the labels apart (a line chart's category axis labels every day,
// and LibreOffice ignores its label skip: 31 dates print over each other).
const dayChart = excelize.Scatter

// dayLine joins a day chart's points with straight lines (a scatter
// chart draws none unless told).
var dayLine = excelize.LineOptions{Type: excelize.LineSolid, Width: 1.5}

// dayAxis is a chart's axis of the days first to last.
func dayAxis(first, last time.Time) excelize.ChartAxis {
	lo, hi := excelDay(first), excelDay(last)
	return excelize.ChartAxis{Font: excelize.Font{Size: chartFontSize, Color: chartTextColor},
		NumFmt: excelize.ChartNumFmt{CustomNumFmt: "d mmm"}, Minimum: &lo, Maximum: &hi}
}

// excelDay is t as a spreadsheet's date serial number.
func excelDay(t time.Time) float64 {
	return t.Sub(time.Date(1899, 12, 30, 0, 0, 0, 0, time.UTC)).Hours() / 24
}

// moneyAxis is a chart's value axis: amounts in currency, shown as its
// cells show them, gridlines, from min when set. Its 0 is not labelled: it
// would print over the first day's label in the corner the axes share.
func moneyAxis(currency string, min *float64) excelize.ChartAxis {
	f := moneyFormat(minorUnit(currency))
	return excelize.ChartAxis{MajorGridLines: true, NumFmt: excelize.ChartNumFmt{CustomNumFmt: f + ";-" + f + ";"},
		Minimum: min, Font: excelize.Font{Size: chartFontSize, Color: chartTextColor}}
}
