package reports

import (
	"database/sql"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/tally-dev/tally/fetch"
	"github.com/xuri/excelize/v2"
)

var detailColumns = []column{
	{"Date", 16},
	{"Date processed", 16},
	{"Project", 22},
	{"Family", 14},
	{"Solution", 16},
	{"Meter", 30},
	{"Meter SKU", 18},
	{"Quantity", 14},
	{"Unit", 12},
	{"Unit price (as sent)", 14},
	{"Usage value", 16},
	{"Currency", 10},
	{"Entitlement type", 16},
	{"Paid as", 20},
	{"Entitlement id", 38},
	{"Payment method id", 38},
	{"Payment method name", 22},
	{"Run id", 38},
	{"Fetched at (UTC)", 20},
}

// detailSheet is one Detail sheet being streamed.
type detailSheet struct {
	name string
	sw   *excelize.StreamWriter
	rows int
}

// detail streams every usage row of the month into Detail sheets, at most
// DetailRowLimit data rows each, continuing on "Detail 2", "Detail 3"…
// Rows go from the query to the sheet one at a time; the month is never
// held in memory (excelize spills a large sheet to a temporary file).
func (b *builder) detail() error {
	dateStyle := b.st.date
	if b.p.Granularity == fetch.Hour {
		dateStyle = b.st.hour
	}
	var cur *detailSheet
	open := func() error {
		name := sheetDetail
		if n := len(b.detailSheets) + 1; n > 1 {
			name = sheetDetail + " " + strconv.Itoa(n)
		}
		if _, err := b.f.NewSheet(name); err != nil {
			return err
		}
		sw, err := b.f.NewStreamWriter(name)
		if err != nil {
			return err
		}
		for i, c := range detailColumns {
			if err := sw.SetColWidth(i+1, i+1, c.width); err != nil {
				return err
			}
		}
		if err := sw.SetPanes(frozenHeader()); err != nil {
			return err
		}
		header := make([]any, len(detailColumns))
		for i, c := range detailColumns {
			header[i] = excelize.Cell{StyleID: b.st.header, Value: c.header}
		}
		if err := sw.SetRow("A1", header); err != nil {
			return err
		}
		b.detailSheets = append(b.detailSheets, name)
		cur = &detailSheet{name: name, sw: sw}
		return nil
	}
	if err := open(); err != nil {
		return err
	}
	row := make([]any, len(detailColumns))
	err := b.each("detail", func(r *sql.Rows) error {
		var (
			date, fetched                                 time.Time
			processed                                     sql.NullTime
			project, family, solution, sku, unit, entType sql.NullString
			entitlement, pm, pmName                       sql.NullString
			meter, currency, category, runID              string
			quantity                                      float64
			price                                         sql.NullFloat64
			cost                                          money
		)
		if err := r.Scan(&date, &processed, &project, &family, &solution, &meter, &sku, &quantity, &unit,
			&price, &cost, &currency, &entType, &category, &entitlement, &pm, &pmName, &runID, &fetched); err != nil {
			return err
		}
		if cur.rows == b.opts.DetailRowLimit {
			if err := b.closeDetail(cur); err != nil {
				return err
			}
			if err := open(); err != nil {
				return err
			}
		}
		if b.detailRows%detailCancelCheckRows == 0 {
			if err := b.ctx.Err(); err != nil {
				return err
			}
		}
		amount, err := b.amount(cost, currency)
		if err != nil {
			return err
		}
		unitPrice, err := b.unitPrice(price, currency)
		if err != nil {
			return err
		}
		processedCell := cell{nil, dateStyle}
		if processed.Valid {
			processedCell.v = processed.Time
		}
		cells := [...]cell{
			{date, dateStyle}, processedCell, b.nstr(project), b.nstr(family), b.nstr(solution),
			b.txt(meter), b.nstr(sku), {quantity, b.st.quantity}, b.nstr(unit), unitPrice, amount,
			b.txt(currency), b.nstr(entType), b.txt(categoryLabel(category)), b.nstr(entitlement),
			b.nstr(pm), b.nstr(pmName), b.txt(runID), {fetched, b.st.dateTime},
		}
		for i, c := range cells {
			row[i] = streamCell(c)
		}
		cur.rows++
		b.detailRows++
		ref, err := excelize.CoordinatesToCellName(1, cur.rows+1)
		if err != nil {
			return err
		}
		return cur.sw.SetRow(ref, row)
	})
	if err != nil {
		return err
	}
	return b.closeDetail(cur)
}

// closeDetail makes the sheet's rows an Excel table and ends its stream.
func (b *builder) closeDetail(d *detailSheet) error {
	if d.rows == 0 {
		if err := d.sw.SetRow("A4", []any{excelize.Cell{StyleID: b.st.text, Value: emptyPeriod}}); err != nil {
			return err
		}
	}
	last, err := excelize.CoordinatesToCellName(len(detailColumns), max(d.rows+1, 2))
	if err != nil {
		return err
	}
	name := "Detail"
	if n := len(b.detailSheets); n > 1 {
		name = fmt.Sprintf("Detail_%d", n)
	}
	if err := d.sw.AddTable(&excelize.Table{Range: "A1:" + last, Name: name, StyleName: "TableStyleLight9"}); err != nil {
		return err
	}
	return d.sw.Flush()
}

// streamCell turns a cell into what a StreamWriter row holds. A nil value
// stays nil (no cell at all); strings stay text, never formulas.
func streamCell(c cell) any {
	switch v := c.v.(type) {
	case nil:
		return nil
	case string:
		if v == "" {
			return nil
		}
	case float64:
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil
		}
	case time.Time:
		c.v = v.UTC()
	}
	return excelize.Cell{StyleID: c.style, Value: c.v}
}
