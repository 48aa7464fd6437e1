package reports

import (
	"archive/zip"
	"context"
	"database/sql"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"

	"github.com/xuri/excelize/v2"

	"github.com/tally-dev/tally"
	"github.com/tally-dev/tally/allocation"
	"github.com/tally-dev/tally/internal/atomicfile"
)

const sheetStatement = "Statement"

// Statement is one cost centre's chargeback statement for a month.
type Statement struct {
	CostCentre string
	Owner      string // e-mail address; "" for none
	Path       string
}

// StatementPath is where a cost centre's statement of month goes: beside
// the month's workbook, as tally-chargeback-YYYY-MM-<cost centre>.xlsx.
func StatementPath(dir string, month string, centre string) string {
	return filepath.Join(dir, month, "tally-chargeback-"+month+"-"+centre+".xlsx")
}

// FinalStatementPath is where the close of month with sequence seq (as
// FinalPath) writes a cost centre's final statement:
// tally-chargeback-YYYY-MM-final[-N]-<cost centre>.xlsx. Cost centre names
// never start with "final", so no statement tally report writes has such
// a name.
func FinalStatementPath(dir string, month string, seq int, centre string) string {
	final := "final"
	if seq > 1 {
		final += "-" + strconv.Itoa(seq)
	}
	return StatementPath(dir, month, final+"-"+centre)
}

// FinalStatementRE matches the file names FinalStatementPath gives, and the
// temporary files they are written through.
var FinalStatementRE = regexp.MustCompile(`^\.?tally-chargeback-\d{4}-\d{2}-final(?:-\d+)?-.+\.xlsx(?:\..*\.tmp)?$`)

// WriteStatements writes one small workbook per cost centre of p's
// chargeback into dir (StatementPath): its own projects and meters, the
// shared costs it received and why, and its totals per currency. Cost no
// cost centre received (Unallocated) gets no statement: the month's
// workbook shows it. Each file is written beside its name and renamed into
// place. Owners come from opts.Allocation. With opts.Close, these are the
// close's final statements (FinalStatementPath), stamped with it.
func WriteStatements(ctx context.Context, src Source, p Period, dir string, opts Options) ([]Statement, error) {
	// An organization's statements go to its own folder, beside its
	// workbook (OrgPath): the group's have the same names.
	at := func(path string) string {
		if p.Organization == "" {
			return path
		}
		return filepath.Join(filepath.Dir(path), p.Organization, filepath.Base(path))
	}
	if opts.Close != nil {
		seq := opts.Close.Seq
		return writeStatements(ctx, src, p, opts, func(month, centre string) string { return at(FinalStatementPath(dir, month, seq, centre)) })
	}
	return writeStatements(ctx, src, p, opts, func(month, centre string) string { return at(StatementPath(dir, month, centre)) })
}

func writeStatements(ctx context.Context, src Source, p Period, opts Options, path func(month, centre string) string) ([]Statement, error) {
	if err := p.validate(); err != nil {
		return nil, fmt.Errorf("write statements: %w", err)
	}
	p.Month = p.Month.UTC()
	if err := opts.normalise(); err != nil {
		return nil, fmt.Errorf("write statements: %w", err)
	}
	first, err := newBuilder(ctx, src, p, opts)
	if err != nil {
		return nil, err
	}
	first.f.Close()
	lines, err := first.chargeback()
	if err != nil {
		return nil, fmt.Errorf("write statements %s: %w", p.Month.Format(monthLayout), err)
	}
	if err := first.readMonthState(); err != nil {
		return nil, fmt.Errorf("write statements %s: %w", p.Month.Format(monthLayout), err)
	}
	closed := first.state.close != nil && !first.state.final
	if closed {
		if first.frozen, err = first.frozeChargeback(first.state.id); err != nil {
			return nil, fmt.Errorf("write statements %s: %w", p.Month.Format(monthLayout), err)
		}
	}
	owners := map[string]string{}
	var centres []string
	for _, l := range lines {
		if l.CostCentre != tally.Unallocated && !slices.Contains(centres, l.CostCentre) {
			centres = append(centres, l.CostCentre)
		}
	}
	if opts.Allocation != nil {
		for _, c := range opts.Allocation.CostCentres {
			owners[c.Name] = c.Owner
			// A closed month's chargeback is the one its close froze:
			// a cost centre configured since still gets its statement,
			// saying that the month as closed charges it nothing.
			if closed && !slices.Contains(centres, c.Name) {
				centres = append(centres, c.Name)
			}
		}
	}
	var out []Statement
	for _, c := range centres {
		st := Statement{CostCentre: c, Owner: owners[c], Path: path(p.Month.Format(monthLayout), c)}
		if err := os.MkdirAll(filepath.Dir(st.Path), 0o750); err != nil {
			return out, fmt.Errorf("write statement %s: %w", st.Path, err)
		}
		err := atomicfile.Write(ctx, st.Path, 0o640, func(w io.Writer) error {
			b, err := newBuilder(ctx, src, p, opts)
			if err != nil {
				return err
			}
			defer b.f.Close()
			b.state, b.frozen = first.state, first.frozen
			if err := b.statement(st, lines); err != nil {
				return err
			}
			b.f.SetZipWriter(func(io.Writer) excelize.ZipWriter { return zip.NewWriter(w) })
			_, err = b.f.WriteToBuffer()
			return err
		})
		if err != nil {
			return out, fmt.Errorf("write statement %s: %w", st.Path, err)
		}
		out = append(out, st)
	}
	return out, nil
}

// statement fills one cost centre's statement: a heading, its totals per
// currency, its own projects and meters, and the shared costs it received
// with the rule, method, ratio and, when the method fell back, why.
func (b *builder) statement(st Statement, lines []chargeLine) error {
	s := sheetStatement
	if err := b.f.SetSheetName("Sheet1", s); err != nil {
		return err
	}
	if err := b.f.SetDocProps(&excelize.DocProperties{
		Title:   fmt.Sprintf("Chargeback statement %s %s", st.CostCentre, b.p.Month.Format(monthLayout)),
		Creator: "Tally", LastModifiedBy: "Tally",
		Created: b.now.Format("2006-01-02T15:04:05Z"), Modified: b.now.Format("2006-01-02T15:04:05Z"),
	}); err != nil {
		return err
	}
	cols := []column{{"Project or rule", 24}, {"Meter or origin", 30}, {"Currency", 10}, {"Paid as", 10}, {"Method", 14}, {"Ratio", 10}, {"Amount", 16}, {"Why", 36}}
	if err := b.setWidths(s, cols); err != nil {
		return err
	}
	if err := b.putRow(s, 1, cell{fmt.Sprintf("Chargeback statement: %s, %s", st.CostCentre, b.p.Month.Format(monthLayout)), b.st.title}); err != nil {
		return err
	}
	sub := fmt.Sprintf("Basis %s, granularity %s. Generated %s.", b.p.Basis, b.p.Granularity, b.now.Format("2006-01-02 15:04 UTC"))
	if st.Owner != "" {
		sub = "Owner " + st.Owner + ". " + sub
	}
	if b.p.Basis == tally.BasisEstimated {
		sub += " Figures " + EstimatedWarning + "."
	}
	if c := b.opts.Close; c != nil {
		sub += fmt.Sprintf(" Final: the month was closed %s by %s; this statement is never rewritten (its figures are those of %s).",
			c.At.UTC().Format("2006-01-02 15:04 UTC"), c.Who, filepath.Base(c.FinalWorkbook))
	} else if b.state.close != nil {
		sub += " " + b.asClosed()
	}
	if err := b.wrapAcross(s, 2, len(cols), sub); err != nil {
		return err
	}
	var mine []chargeLine
	for _, l := range lines {
		if l.CostCentre == st.CostCentre {
			mine = append(mine, l)
		}
	}
	row := 4
	if err := b.putRow(s, row, cell{"Totals", b.st.section}); err != nil {
		return err
	}
	for _, t := range allocation.Totals(mine) {
		for _, r := range []struct {
			label string
			d     tally.Decimal
			bold  bool
		}{{"Direct: its own projects", t.Direct, false}, {"Shared costs received", t.Shared, false}, {"Total", t.Total, true}, {"of which billed", t.Billed, false}} {
			v, err := b.amount(money{dec: r.d, valid: true}, t.Currency)
			if err != nil {
				return err
			}
			label := b.txt(r.label)
			if r.bold {
				label = cell{r.label, b.st.label}
			}
			row++
			if err := b.putRow(s, row, label, cell{nil, 0}, b.txt(t.Currency), cell{nil, 0}, cell{nil, 0}, cell{nil, 0}, v); err != nil {
				return err
			}
		}
	}
	row, err := b.statementClose(s, row)
	if err != nil {
		return err
	}
	if row, err = b.statementMonths(s, st, row+2, mine); err != nil {
		return err
	}
	return b.statementLines(s, row+2, mine)
}

// statementClose adds a closed month's close stamp below row, as the
// Summary shows it: when, by whom, why, the fingerprint and the final
// workbook. It returns the last row written (row when the month is not
// closed).
func (b *builder) statementClose(s string, row int) (int, error) {
	stamp := b.closeLines()
	if len(stamp) == 0 {
		return row, nil
	}
	row += 2
	if err := b.putRow(s, row, cell{"Close stamp", b.st.section}); err != nil {
		return 0, err
	}
	for _, l := range stamp {
		row++
		if err := b.putRow(s, row, l...); err != nil {
			return 0, err
		}
	}
	return row, nil
}

// statementChart is a statement's chart of its months: a bar a month,
// months down the side, so thirteen labels never crowd.
const (
	statementChartWidth = 560
	statementChartBase  = 90 // its title and axis, in pixels
	statementChartBar   = 18 // a month's bar
	statementChartMin   = 200
)

// statementMonths adds, from row, the cost centre's total per month and
// currency over the last thirteen months (this one from its lines, the
// earlier ones as the chargeback records them) and a bar chart of each
// currency's beside its months. It returns the last row used.
func (b *builder) statementMonths(s string, st Statement, row int, mine []chargeLine) (int, error) {
	type month struct {
		month string
		total money
	}
	by := map[string][]month{}
	var currencies []string
	err := b.each("statement_months", func(r *sql.Rows) error {
		var m month
		var currency string
		if err := r.Scan(&m.month, &currency, &m.total); err != nil {
			return err
		}
		if _, ok := by[currency]; !ok {
			currencies = append(currencies, currency)
		}
		by[currency] = append(by[currency], m)
		return nil
	}, sql.Named("centre", st.CostCentre))
	if err != nil {
		return 0, err
	}
	this := b.p.Month.Format(monthLayout)
	for _, t := range allocation.Totals(mine) {
		if _, ok := by[t.Currency]; !ok {
			currencies = append(currencies, t.Currency)
		}
		by[t.Currency] = append(by[t.Currency], month{this, money{dec: t.Total, valid: true}})
	}
	if len(currencies) == 0 {
		return row, nil
	}
	slices.Sort(currencies)
	if err := b.putRow(s, row, cell{"Its months: total per month, the last 13", b.st.section}); err != nil {
		return 0, err
	}
	row++
	for _, c := range currencies {
		months := by[c]
		first := row + 1
		if err := b.putRow(s, row, cell{"Month", b.st.header}, cell{"Total, " + c, b.st.header}); err != nil {
			return 0, err
		}
		negative := false
		for i, m := range months {
			v, err := b.amount(m.total, c)
			if err != nil {
				return 0, err
			}
			if err := b.putRow(s, first+i, b.txt(m.month), v); err != nil {
				return 0, err
			}
			negative = negative || m.total.dec.Sign() < 0
		}
		last := first + len(months) - 1
		height := max(statementChartMin, statementChartBase+statementChartBar*len(months))
		var zero *float64
		if !negative {
			zero = new(float64)
		}
		ref := func(col string) string { return fmt.Sprintf("'%s'!$%s$%d:$%s$%d", s, col, first, col, last) }
		err := b.f.AddChart(s, fmt.Sprintf("C%d", row), &excelize.Chart{
			Type: excelize.Bar,
			Series: []excelize.ChartSeries{{
				Name:       fmt.Sprintf("'%s'!$B$%d", s, row),
				Categories: ref("A"),
				Values:     ref("B"),
			}},
			Title:     chartTitle(st.CostCentre + ": total per month, " + c),
			Legend:    excelize.ChartLegend{Position: "none"},
			Dimension: excelize.ChartDimension{Width: statementChartWidth, Height: uint(height)},
			XAxis:     excelize.ChartAxis{ReverseOrder: true, Font: excelize.Font{Size: chartFontSize, Color: chartTextColor}},
			YAxis:     moneyAxis(c, zero),
		})
		if err != nil {
			return 0, fmt.Errorf("chart %s: %w", c, err)
		}
		// The next currency's months start below both its table and its
		// chart (pixels are three quarters of a point; a row is 15).
		row = max(last, row+int(float64(height)*0.75/lineHeight)+1) + 2
	}
	return row - 2, nil
}

// statementLines adds the cost centre's lines from row under one header,
// which repeats on every printed page: its own projects and meters, each
// project's subtotal per currency and their total per currency (the
// statement's "Direct: its own projects", footing as shown), then the
// shared costs it received, each with its rule, method, ratio and why.
func (b *builder) statementLines(s string, row int, mine []chargeLine) error {
	t, err := b.newTable(s, "", row, []column{{"Project or rule", 0}, {"Meter or origin", 0}, {"Currency", 0}, {"Paid as", 0}, {"Method", 0}, {"Ratio", 0}, {"Amount", 0}, {"Why", 0}})
	if err != nil {
		return err
	}
	section := func(text string) error {
		t.row++
		return b.putRow(s, t.row, cell{text, b.st.section})
	}
	if err := section("Its own projects and meters, each charged whole to it"); err != nil {
		return err
	}
	var own []chargeLine
	for _, l := range mine {
		if !l.Shared() {
			own = append(own, l)
		}
	}
	if len(own) == 0 {
		none := "None: no project of this cost centre had usage this month."
		if b.state.close != nil && len(mine) == 0 {
			none = "None: the month as closed charges nothing to this cost centre."
		}
		t.row++
		if err := b.putRow(s, t.row, cell{none, b.st.wrap}); err != nil {
			return err
		}
	}
	// Lines come by currency, then project: a project's lines of a
	// currency are together, and end with its subtotal.
	total := b.newFoot(len(t.cols))
	for i := 0; i < len(own); {
		l := own[i]
		sub := b.newFoot(len(t.cols))
		sub.word = "Subtotal"
		project := l.Project
		if project == "" {
			project = noneLabel
		}
		line := sub.line(project, project, map[int]cell{2: b.txt(l.Currency)})
		j := i
		for ; j < len(own) && own[j].Currency == l.Currency && own[j].Project == l.Project; j++ {
			o := own[j]
			v, err := b.amount(lineMoney(o.Amount), o.Currency)
			if err != nil {
				return err
			}
			line.amount(6, o.Currency, lineMoney(o.Amount))
			if err := t.add(b.wrapped(project), b.wrapped(o.Meter), b.txt(o.Currency), b.txt(o.PaidAs), b.txt(o.Method), b.ratio(lineMoney(o.Ratio)), v, cell{nil, b.st.reason}); err != nil {
				return err
			}
		}
		// The total adds the subtotals as shown, so that they foot to it.
		b.currencyLine(total, l.Currency, 2).amount(6, l.Currency, money{dec: line.amounts[6].exact, valid: line.amounts[6].priced})
		if t.row, err = sub.writeBelow(t, t.row); err != nil {
			return err
		}
		i = j
	}
	if t.row, err = total.write(t); err != nil {
		return err
	}
	t.row++
	if err := section("Shared costs received"); err != nil {
		return err
	}
	received := 0
	for _, l := range mine {
		if !l.Shared() {
			continue
		}
		v, err := b.amount(lineMoney(l.Amount), l.Currency)
		if err != nil {
			return err
		}
		project := l.Project
		if project == "" {
			project = "(no project)"
		}
		why := "rule " + l.Version + ": " + l.Method + " split"
		if l.Note != "" {
			why += "; " + l.Note
		}
		if err := t.add(b.wrapped(l.Version), b.wrapped(project+", "+l.Meter), b.txt(l.Currency), b.txt(l.PaidAs), b.txt(l.Method), b.ratio(lineMoney(l.Ratio)), v, cell{why, b.st.reason}); err != nil {
			return err
		}
		received++
	}
	if received == 0 {
		t.row++
		if err := b.putRow(s, t.row, cell{"None: this cost centre received no shared cost this month.", b.st.wrap}); err != nil {
			return err
		}
	}
	// A statement longer than a page starts its lines on a page of their
	// own, after the totals, the close stamp and the months: the header
	// never ends a page alone, and repeats on every page after.
	scale, _ := printScale(b.printWidths[s])
	height := 0.0
	for r := 1; r <= t.row; r++ {
		h, err := b.f.GetRowHeight(s, r)
		if err != nil {
			return err
		}
		height += h
	}
	if height*float64(scale)/100 > 0.97*printableHeight {
		if err := b.f.InsertPageBreak(s, fmt.Sprintf("A%d", row)); err != nil {
			return err
		}
	}
	return b.printSetup(s, row)
}

// asClosed says, on a statement of a closed month that is not the close's
// own, that its chargeback is the one the close froze, with the close's
// stamp: a later change of the config's cost centres or rules does not
// apply to it.
func (b *builder) asClosed() string {
	c := b.state.close
	reason := c.Reason
	if reason == "" {
		reason = "none given"
	}
	froze := "the cost centres and rules in force when it closed"
	if !b.frozen {
		froze = "none: the month was closed without chargeback, so all its cost is Unallocated"
	}
	return fmt.Sprintf("As closed: the month was closed %s by %s (reason: %s; fingerprint %d rows, content hash %s; final workbook %s). "+
		"Its chargeback is the one the close froze, %s; later changes of cost centres or rules do not apply to it until it is reopened and closed again. "+
		"Figures are today's data: late charges since the close are included.",
		c.At.UTC().Format("2006-01-02 15:04 UTC"), c.Who, reason, c.Rows, c.ContentHash, filepath.Base(c.FinalWorkbook), froze)
}

// frozeChargeback reports whether the close id froze cost centres
// (allocation_cost_centres rows under its id).
func (b *builder) frozeChargeback(id string) (bool, error) {
	rows, err := b.src.QueryContext(b.ctx, `SELECT count(*) > 0 FROM allocation_cost_centres WHERE close_id = CAST(? AS UUID)`, id)
	if err != nil {
		return false, fmt.Errorf("read the close's chargeback: %w", err)
	}
	defer rows.Close()
	var froze bool
	if rows.Next() {
		if err := rows.Scan(&froze); err != nil {
			return false, fmt.Errorf("read the close's chargeback: %w", err)
		}
	}
	return froze, rows.Err()
}
