package reports

import (
	"database/sql"
	"fmt"
	"math"
	"time"

	"github.com/xuri/excelize/v2"
)

// cell is one value and its style. The value is nil (blank), a string
// (always a text cell, never a formula, whatever it starts with), float64,
// int64 or time.Time (a date cell; the style gives its format).
type cell struct {
	v     any
	style int
}

// put writes c at (col, row) of sheet.
func (b *builder) put(sheet string, col, row int, c cell) error {
	ref, err := excelize.CoordinatesToCellName(col, row)
	if err != nil {
		return err
	}
	switch v := c.v.(type) {
	case nil:
	case string:
		if v == "" {
			break // an empty text is a blank cell
		}
		// SetCellStr stores text as text: "=1+1" stays those four
		// characters, never a formula.
		err = b.f.SetCellStr(sheet, ref, v)
	case float64:
		if math.IsNaN(v) || math.IsInf(v, 0) {
			break
		}
		err = b.f.SetCellFloat(sheet, ref, v, -1, 64)
	case int64:
		err = b.f.SetCellInt(sheet, ref, v)
	case time.Time:
		err = b.f.SetCellValue(sheet, ref, v.UTC())
	default:
		err = fmt.Errorf("cell %s!%s: unsupported value type %T", sheet, ref, c.v)
	}
	if err != nil {
		return err
	}
	if c.style != 0 {
		return b.f.SetCellStyle(sheet, ref, ref, c.style)
	}
	return nil
}

// putRow writes cells from column 1 of row, and makes the row as high as
// its wrapped cells need.
func (b *builder) putRow(sheet string, row int, cells ...cell) error {
	for i, c := range cells {
		if err := b.put(sheet, i+1, row, c); err != nil {
			return err
		}
	}
	return b.fitRowHeight(sheet, row, cells)
}

// Cell constructors.

func (b *builder) txt(s string) cell { return cell{s, b.st.text} }

func (b *builder) wrapped(s string) cell { return cell{s, b.st.wrap} }

// wrappedNull is a text that may be NULL (blank) and wraps in its column.
func (b *builder) wrappedNull(s sql.NullString) cell {
	if !s.Valid {
		return cell{nil, b.st.wrap}
	}
	return cell{s.String, b.st.wrap}
}

func (b *builder) nstr(s sql.NullString) cell {
	if !s.Valid {
		return cell{nil, b.st.text}
	}
	return cell{s.String, b.st.text}
}

func (b *builder) count(n int64) cell { return cell{n, b.st.integer} }

func (b *builder) qty(f sql.NullFloat64) cell {
	if !f.Valid {
		return cell{nil, b.st.quantity}
	}
	return cell{f.Float64, b.st.quantity}
}

func (b *builder) day(t sql.NullTime) cell {
	if !t.Valid {
		return cell{nil, b.st.date}
	}
	return cell{t.Time, b.st.date}
}

func (b *builder) stamp(t sql.NullTime) cell {
	if !t.Valid {
		return cell{nil, b.st.dateTime}
	}
	return cell{t.Time, b.st.dateTime}
}

// amount is an exact amount in currency; blank when NULL.
func (b *builder) amount(m money, currency string) (cell, error) {
	style, err := b.st.moneyStyle(currency)
	if err != nil {
		return cell{}, err
	}
	if !m.valid {
		return cell{nil, style}, nil
	}
	return cell{m.float(), style}, nil
}

// value is a usage value in currency: "not priced" when NULL, as an
// estimate's usage of a meter no rate card price matches is (blank would
// read as nothing used, 0 as nothing owed).
func (b *builder) value(m money, currency string) (cell, error) {
	if !m.valid {
		return cell{NotPriced, b.st.notPriced}, nil
	}
	return b.amount(m, currency)
}

// unitPrice is a price per unit in currency; blank when NULL.
func (b *builder) unitPrice(v any, currency string) (cell, error) {
	style, err := b.st.priceStyle(currency)
	if err != nil {
		return cell{}, err
	}
	switch p := v.(type) {
	case money:
		if p.valid {
			return cell{p.float(), style}, nil
		}
	case sql.NullFloat64:
		if p.Valid {
			return cell{p.Float64, style}, nil
		}
	}
	return cell{nil, style}, nil
}

// column is one column of a table: its header and width in characters.
type column struct {
	header string
	width  float64
}

// table writes a header row and data rows below it on a sheet. On a sheet
// of its own (first row 1) the header is frozen and the rows become an
// Excel table, which gives them filters and banding.
type table struct {
	b     *builder
	sheet string
	name  string // Excel table name; "" for none
	cols  []column
	first int // header row
	row   int // last row written
}

// newTable writes the header at row first. name is the Excel table name
// ("" for a plain range with a styled header).
func (b *builder) newTable(sheet, name string, first int, cols []column) (*table, error) {
	t := &table{b: b, sheet: sheet, name: name, cols: cols, first: first, row: first}
	if first == 1 {
		if err := b.setWidths(sheet, cols); err != nil {
			return nil, err
		}
	}
	header := make([]cell, len(cols))
	for i, c := range cols {
		header[i] = cell{c.header, b.st.header}
	}
	if err := b.putRow(sheet, first, header...); err != nil {
		return nil, err
	}
	// A printed page never ends on a header, nor on the title above it.
	if b.printKeep == nil {
		b.printKeep = map[string][]int{}
	}
	b.printKeep[sheet] = append(b.printKeep[sheet], first, first-1)
	if first == 1 {
		if err := b.f.SetPanes(sheet, frozenHeader()); err != nil {
			return nil, err
		}
	}
	return t, nil
}

func (b *builder) setWidths(sheet string, cols []column) error {
	b.printWidth(sheet, columnsWidth(cols))
	for i, c := range cols {
		name, err := excelize.ColumnNumberToName(i + 1)
		if err != nil {
			return err
		}
		if err := b.f.SetColWidth(sheet, name, name, c.width); err != nil {
			return err
		}
	}
	return nil
}

// columnsWidth is the columns' width together, in characters.
func columnsWidth(cols []column) float64 {
	w := 0.0
	for _, c := range cols {
		w += c.width
	}
	return w
}

func frozenHeader() *excelize.Panes {
	return &excelize.Panes{
		Freeze:      true,
		YSplit:      1,
		TopLeftCell: "A2",
		ActivePane:  "bottomLeft",
		Selection:   []excelize.Selection{{SQRef: "A2", ActiveCell: "A2", Pane: "bottomLeft"}},
	}
}

func (t *table) add(cells ...cell) error {
	if len(cells) != len(t.cols) {
		return fmt.Errorf("sheet %s: row has %d cells, table has %d columns", t.sheet, len(cells), len(t.cols))
	}
	t.row++
	return t.b.putRow(t.sheet, t.row, cells...)
}

// rows is the number of data rows written.
func (t *table) rows() int { return t.row - t.first }

// finish turns the rows into an Excel table (filters, banding). A table
// with no data rows keeps one empty row, as Excel tables need one, and
// empty says why below it.
func (t *table) finish(empty string) error {
	if t.b.printHeld == nil {
		t.b.printHeld = map[string]int{}
	}
	t.b.printHeld[t.sheet] += t.rows()
	// Wrapped in column A: a sheet that prints across pages repeats
	// column A on each, and cuts off what runs past it.
	if t.rows() == 0 && empty != "" {
		if err := t.b.putRow(t.sheet, t.first+3, cell{empty, t.b.st.wrap}); err != nil {
			return err
		}
	}
	if t.name == "" {
		return nil
	}
	last, err := excelize.CoordinatesToCellName(len(t.cols), max(t.row, t.first+1))
	if err != nil {
		return err
	}
	firstRef, err := excelize.CoordinatesToCellName(1, t.first)
	if err != nil {
		return err
	}
	return t.b.f.AddTable(t.sheet, &excelize.Table{
		Range:     firstRef + ":" + last,
		Name:      t.name,
		StyleName: "TableStyleLight9",
	})
}
