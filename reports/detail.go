package reports

import (
	"database/sql"
	"errors"
	"fmt"
	"math"
	"strconv"
	"sync"
	"time"

	"github.com/xuri/excelize/v2"

	"github.com/tally-dev/tally"
)

// detailColumns: as narrow as their values allow (a UUID takes 37; an
// hour's date and time 17, a space to spare beside the next column). What
// a row is and costs comes first: on paper the sheet prints its leftmost
// columns, as far as fit the page's width (printDetail), the usage value
// among them.
var detailColumns = []column{
	{"Date", 17},
	{"Project", 20},
	{"Meter", 30},
	{"Quantity", 14},
	{"Unit", 12},
	{"Usage value", 16},
	{"Currency", 10},
	{"Paid as", 20},
	{"Payment method name", 22},
	{"Date processed", 17},
	{"Family", 20}, // "Content Protection"
	{"Solution", 16},
	{"Meter SKU", 18},
	{"Unit price (as sent)", 14},
	{"Entitlement type", 16},
	{"Entitlement id", 37},
	{"Payment method id", 37},
	{"Run id", 37},
	{"Fetched at (UTC)", 20},
}

// Positions in detailColumns of the cells whose style depends on the
// row's currency.
const (
	detailAmount    = 5
	detailUnitPrice = 13
)

// detailSheet is one Detail sheet being streamed.
type detailSheet struct {
	name string
	sw   *excelize.StreamWriter
	rows int
}

// The Detail rows are read on a goroutine of their own (the query, the
// scan, each value turned into its cell), a few batches ahead of the
// StreamWriter, which takes them in order: reading overlaps with writing,
// which is most of a workbook's time. No other query runs meanwhile, so a
// Source that runs one query at a time (a *sql.Conn) still serves.

// detailBatchRows rows go over the channel at a time; detailBatchesAhead
// bound how far reading runs ahead of writing, and so the memory it holds.
const (
	detailBatchRows    = 256
	detailBatchesAhead = 4
)

// detailBatch is rows of cells, len(detailColumns) a row, then the error
// that ended the rows, if any.
type detailBatch struct {
	cells      []excelize.Cell
	currencies []string // the row's currency, where its style was not ready
	err        error
}

// detailReader reads the Detail rows for the builder.
type detailReader struct {
	batches chan detailBatch
	free    chan detailBatch
	stop    chan struct{}
	wg      sync.WaitGroup
}

// startDetail starts reading the Detail rows. Cell styles that depend on
// the currency are made up front for the month's currencies; a row in
// another currency gets its style when it is written.
func (b *builder) startDetail() error {
	money, price := map[string]int{}, map[string]int{}
	for _, c := range b.currencies {
		m, err := b.st.moneyStyle(c)
		if err != nil {
			return err
		}
		p, err := b.st.priceStyle(c)
		if err != nil {
			return err
		}
		money[c], price[c] = m, p
	}
	dateStyle := b.st.date
	if b.p.Granularity == tally.Hour {
		dateStyle = b.st.hour
	}
	r := &detailReader{
		batches: make(chan detailBatch, detailBatchesAhead),
		free:    make(chan detailBatch, detailBatchesAhead+2),
		stop:    make(chan struct{}),
	}
	// The ranges are read first, on this goroutine: their counts tell
	// each Detail sheet's printed page how many rows it holds before its
	// stream starts.
	ranges, total, err := b.detailRanges()
	if err != nil {
		return err
	}
	b.detailTotal = total
	b.detailIn = r
	styles := detailStyles{date: dateStyle, text: b.st.text, quantity: b.st.quantity, stamp: b.st.dateTime, money: money, price: price}
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		defer close(r.batches)
		r.read(b, styles, ranges)
	}()
	return nil
}

// detailStyles are the style ids the reader gives cells; it never makes a
// style itself (excelize's File is not safe for concurrent use).
type detailStyles struct {
	date, text, quantity, stamp int
	money, price                map[string]int
}

// read runs the detail query and sends its rows as cells.
func (r *detailReader) read(b *builder, st detailStyles, ranges []dateRange) {
	var cur detailBatch
	send := func() bool {
		select {
		case r.batches <- cur:
			cur = detailBatch{}
			return true
		case <-r.stop:
			return false
		}
	}
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
	text := func(s string) any {
		if s == "" {
			return nil
		}
		return s
	}
	ntext := func(s sql.NullString) any {
		if !s.Valid {
			return nil
		}
		return text(s.String)
	}
	stopped := errDetailStopped
	scan := func(rows *sql.Rows) error {
		if err := rows.Scan(&date, &processed, &project, &family, &solution, &meter, &sku, &quantity, &unit,
			&price, &cost, &currency, &entType, &category, &entitlement, &pm, &pmName, &runID, &fetched); err != nil {
			return err
		}
		if cur.cells == nil {
			select {
			case cur = <-r.free:
			default:
				cur.cells = make([]excelize.Cell, 0, detailBatchRows*len(detailColumns))
				cur.currencies = make([]string, 0, detailBatchRows)
			}
		}
		moneyStyle, ok1 := st.money[currency]
		priceStyle, ok2 := st.price[currency]
		missing := ""
		if !ok1 || !ok2 {
			missing = currency
		}
		var pv, av, dp any
		if price.Valid {
			pv = finite(price.Float64)
		}
		if cost.valid {
			av = finite(cost.float())
		}
		if processed.Valid {
			dp = processed.Time.UTC()
		}
		cur.cells = append(cur.cells,
			excelize.Cell{StyleID: st.date, Value: date.UTC()},
			excelize.Cell{StyleID: st.text, Value: ntext(project)},
			excelize.Cell{StyleID: st.text, Value: text(meter)},
			excelize.Cell{StyleID: st.quantity, Value: finite(quantity)},
			excelize.Cell{StyleID: st.text, Value: ntext(unit)},
			excelize.Cell{StyleID: moneyStyle, Value: av},
			excelize.Cell{StyleID: st.text, Value: text(currency)},
			excelize.Cell{StyleID: st.text, Value: text(categoryLabel(category))},
			excelize.Cell{StyleID: st.text, Value: ntext(pmName)},
			excelize.Cell{StyleID: st.date, Value: dp},
			excelize.Cell{StyleID: st.text, Value: ntext(family)},
			excelize.Cell{StyleID: st.text, Value: ntext(solution)},
			excelize.Cell{StyleID: st.text, Value: ntext(sku)},
			excelize.Cell{StyleID: priceStyle, Value: pv},
			excelize.Cell{StyleID: st.text, Value: ntext(entType)},
			excelize.Cell{StyleID: st.text, Value: ntext(entitlement)},
			excelize.Cell{StyleID: st.text, Value: ntext(pm)},
			excelize.Cell{StyleID: st.text, Value: text(runID)},
			excelize.Cell{StyleID: st.stamp, Value: fetched.UTC()},
		)
		cur.currencies = append(cur.currencies, missing)
		if len(cur.currencies) == detailBatchRows && !send() {
			return stopped
		}
		return nil
	}
	var err error
	for _, rg := range ranges {
		if err != nil {
			break
		}
		err = b.each("detail", scan, sql.Named("detail_from", rg.from), sql.Named("detail_to", rg.to))
	}
	if errors.Is(err, stopped) {
		return
	}
	if len(cur.currencies) > 0 || err != nil {
		cur.err = err
		send()
	}
}

var errDetailStopped = errors.New("detail: writing stopped")

// detailRangeRows is about how many rows one read of the Detail rows
// sorts: enough that a month takes a few dozen queries, few enough that
// DuckDB sorts them in a few tens of MB.
var detailRangeRows int64 = 64 << 10

// dateRange is a range of usage dates, end exclusive.
type dateRange struct{ from, to time.Time }

// detailRanges splits the month's Detail rows into ranges of whole days of
// their date, in order, of about detailRangeRows rows each (a day with
// more is a range of its own), and counts the rows.
func (b *builder) detailRanges() ([]dateRange, int64, error) {
	var out []dateRange
	var n, total int64
	err := b.each("detail_days", func(rows *sql.Rows) error {
		var day time.Time
		var count int64
		if err := rows.Scan(&day, &count); err != nil {
			return err
		}
		day = day.UTC()
		total += count
		next := day.AddDate(0, 0, 1)
		if len(out) > 0 && n+count <= detailRangeRows {
			out[len(out)-1].to = next
			n += count
			return nil
		}
		out = append(out, dateRange{day, next})
		n = count
		return nil
	})
	return out, total, err
}

// finite is v as a cell value: NaN and infinities are no number Excel
// holds, and stay blank.
func finite(v float64) any {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil
	}
	return v
}

// stopDetail ends the reader, if it still runs, and waits for it.
func (b *builder) stopDetail() {
	r := b.detailIn
	if r == nil {
		return
	}
	b.detailIn = nil
	close(r.stop)
	r.wg.Wait()
}

// detail writes every usage row of the month into Detail sheets, at most
// DetailRowLimit data rows each, continuing on "Detail 2", "Detail 3"…
// Rows go from the query to the sheet in batches; the month is never held
// in memory (excelize spills a large sheet to a temporary file).
func (b *builder) detail() error {
	if err := b.startDetail(); err != nil {
		return err
	}
	r := b.detailIn
	defer b.stopDetail()
	var cur *detailSheet
	open := func() error {
		name := sheetDetail
		if n := len(b.detailSheets) + 1; n > 1 {
			name = sheetDetail + " " + strconv.Itoa(n)
		}
		if _, err := b.f.NewSheet(name); err != nil {
			return err
		}
		if err := b.printDetail(name); err != nil {
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
		lines := 1
		for i, c := range detailColumns {
			header[i] = excelize.Cell{StyleID: b.st.header, Value: c.header}
			lines = max(lines, wrappedLines(c.header, c.width, true))
		}
		if err := sw.SetRow("A1", header, excelize.RowOpts{Height: float64(lines) * lineHeight}); err != nil {
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
	ref := []byte{'A'}
	for batch := range r.batches {
		for i, missing := range batch.currencies {
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
			cells := batch.cells[i*len(detailColumns) : (i+1)*len(detailColumns)]
			if missing != "" {
				if err := b.styleCurrency(cells, missing); err != nil {
					return err
				}
			}
			for k := range cells {
				row[k] = nil
				if cells[k].Value != nil {
					row[k] = &cells[k]
				}
			}
			cur.rows++
			b.detailRows++
			ref = strconv.AppendInt(ref[:1], int64(cur.rows+1), 10)
			if err := cur.sw.SetRow(string(ref), row); err != nil {
				return err
			}
		}
		if batch.err != nil {
			return batch.err
		}
		batch.cells, batch.currencies = batch.cells[:0], batch.currencies[:0]
		select {
		case r.free <- batch:
		default:
		}
	}
	return b.closeDetail(cur)
}

// printDetail gives the Detail sheet about to be streamed its printed
// page (printRows): the rows it will hold, of the month's count, and the
// first of them as far as a page holds.
func (b *builder) printDetail(name string) error {
	limit := int64(b.opts.DetailRowLimit)
	held := min(limit, max(b.detailTotal-int64(len(b.detailSheets))*limit, 0))
	r := rowsPrint{held: int(held), keep: map[int]bool{1: true}}
	header := 1
	for _, c := range detailColumns {
		r.widths, r.names = append(r.widths, c.width), append(r.names, c.header)
		header = max(header, wrappedLines(c.header, c.width, true))
	}
	r.heights = append(r.heights, float64(header)*lineHeight)
	// Past a page's rows at any scale: more would print no differently.
	most := int64(math.Floor(printableHeight / (lineHeight * minPrintScale / 100)))
	for range min(held, most+1) {
		r.heights = append(r.heights, lineHeight)
	}
	if held == 0 { // the sheet's note, in row 4
		r.heights = append(r.heights, lineHeight, lineHeight, lineHeight)
	}
	return b.printRows(name, r)
}

// styleCurrency gives a row's price and amount the styles of a currency
// the month's totals did not show.
func (b *builder) styleCurrency(cells []excelize.Cell, currency string) error {
	m, err := b.st.moneyStyle(currency)
	if err != nil {
		return err
	}
	p, err := b.st.priceStyle(currency)
	if err != nil {
		return err
	}
	cells[detailAmount].StyleID, cells[detailUnitPrice].StyleID = m, p
	return nil
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
