package reports

import (
	"archive/zip"
	"context"
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
	row += 2
	if err := b.putRow(s, row, cell{"Its own projects and meters", b.st.section}); err != nil {
		return err
	}
	own, err := b.newTable(s, "Own", row+1, []column{{"Project", 0}, {"Meter", 0}, {"Currency", 0}, {"Paid as", 0}, {"Method", 0}, {"Ratio", 0}, {"Amount", 0}, {"Why", 0}})
	if err != nil {
		return err
	}
	for _, l := range mine {
		if l.Shared() {
			continue
		}
		v, err := b.amount(lineMoney(l.Amount), l.Currency)
		if err != nil {
			return err
		}
		if err := own.add(b.wrapped(l.Project), b.wrapped(l.Meter), b.txt(l.Currency), b.txt(l.PaidAs), b.txt(l.Method), b.ratio(lineMoney(l.Ratio)), v, b.wrapped("its project")); err != nil {
			return err
		}
	}
	none := "None: no project of this cost centre had usage this month."
	if b.state.close != nil && len(mine) == 0 {
		none = "None: the month as closed charges nothing to this cost centre."
	}
	if err := own.finish(none); err != nil {
		return err
	}
	row = max(own.row, own.first+1) + 3
	if own.rows() == 0 {
		row += 2
	}
	if err := b.putRow(s, row, cell{"Shared costs received", b.st.section}); err != nil {
		return err
	}
	sh, err := b.newTable(s, "Received", row+1, []column{{"Rule", 0}, {"Origin project, meter", 0}, {"Currency", 0}, {"Paid as", 0}, {"Method", 0}, {"Ratio", 0}, {"Amount", 0}, {"Why", 0}})
	if err != nil {
		return err
	}
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
		if err := sh.add(b.wrapped(l.Version), b.wrapped(project+", "+l.Meter), b.txt(l.Currency), b.txt(l.PaidAs), b.txt(l.Method), b.ratio(lineMoney(l.Ratio)), v, b.wrapped(why)); err != nil {
			return err
		}
	}
	if err := sh.finish("None: this cost centre received no shared cost this month."); err != nil {
		return err
	}
	return b.printSetup(s, false)
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
