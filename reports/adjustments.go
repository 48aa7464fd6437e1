package reports

import (
	"context"
	"database/sql"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/tally-dev/tally"
)

const sheetAdjustments = "Adjustments to closed months"

// adjustmentRow is one difference between a closed month as closed and
// today.
type adjustmentRow struct {
	month, closedAt, project, meter, paymentMethod, currency string
	closed, today, diff                                      money
}

// adjustmentTotal is one closed month's adjustment in one currency.
type adjustmentTotal struct {
	month, currency string
	diff            tally.Decimal
}

// readAdjustments reads every non-zero difference of a closed month of the
// report's basis and granularity, and sums them per closed month and
// currency, exactly, for the Summary.
func (b *builder) readAdjustments() error {
	totals := map[[2]string]tally.Decimal{}
	err := b.each("adjustments", func(r *sql.Rows) error {
		var a adjustmentRow
		if err := r.Scan(&a.month, &a.closedAt, &a.project, &a.meter, &a.paymentMethod, &a.currency, &a.closed, &a.today, &a.diff); err != nil {
			return err
		}
		b.adjustments = append(b.adjustments, a)
		k := [2]string{a.month, a.currency}
		totals[k] = totals[k].Add(a.diff.dec)
		return nil
	})
	if err != nil {
		return err
	}
	for k, d := range totals {
		b.adjustmentTotals = append(b.adjustmentTotals, adjustmentTotal{month: k[0], currency: k[1], diff: d})
	}
	sort.Slice(b.adjustmentTotals, func(i, j int) bool {
		x, y := b.adjustmentTotals[i], b.adjustmentTotals[j]
		if x.month != y.month {
			return x.month < y.month
		}
		return x.currency < y.currency
	})
	return nil
}

// adjustmentsSheet fills "Adjustments to closed months": present only in
// a workbook written while a closed month differs from its figures at
// close.
func (b *builder) adjustmentsSheet() error {
	t, err := b.newTable(sheetAdjustments, "Adjustments", 1, []column{
		// As narrow as their values allow, so that every column, the
		// amounts too, prints one page wide at a legible size.
		{"Closed month", 9},
		{"Closed at (UTC)", 17},
		{"Project", 16},
		{"Meter", 24},
		{"Payment method", 37},
		{"Currency", 9},
		{"As closed", 14},
		{"Today", 14},
		{"Adjustment", 14},
	})
	if err != nil {
		return err
	}
	// A total row per closed month and currency, as the Summary lists
	// them: the month in its column, "Total USD" in the wide Project
	// column (column A is too narrow for a label).
	totals := b.newFoot(9)
	totals.labelCol = 2
	for _, a := range b.adjustments {
		l := totals.line(a.month+" "+a.currency, a.currency, map[int]cell{0: b.txt(a.month), 5: b.txt(a.currency)})
		cells := []cell{b.txt(a.month), b.txt(a.closedAt), b.wrapped(orNone(sql.NullString{String: a.project, Valid: a.project != ""})),
			b.wrapped(a.meter), b.txt(a.paymentMethod), b.txt(a.currency)}
		for _, m := range []money{a.closed, a.today, a.diff} {
			c, err := b.amount(m, a.currency)
			if err != nil {
				return err
			}
			l.amount(len(cells), a.currency, m)
			cells = append(cells, c)
		}
		if err := t.add(cells...); err != nil {
			return err
		}
	}
	if err := t.finish(""); err != nil {
		return err
	}
	_, err = totals.write(t)
	return err
}

// adjustments adds the Summary's block on closed months' adjustments, when
// there are any.
func (s *summaryWriter) adjustments() error {
	b := s.b
	if len(b.adjustmentTotals) == 0 {
		return nil
	}
	if err := s.section("Adjustments to closed months (late charges loaded after the close; see the sheet " + sheetAdjustments + ")"); err != nil {
		return err
	}
	if err := s.header("Closed month", "Currency", "Adjustment"); err != nil {
		return err
	}
	for _, a := range b.adjustmentTotals {
		c, err := b.amount(money{dec: a.diff, valid: true}, a.currency)
		if err != nil {
			return err
		}
		if err := s.put(b.txt(a.month), b.txt(a.currency), c); err != nil {
			return err
		}
	}
	return nil
}

// Fingerprint is what a close records of a month: its rows as the workbook
// reads them, counted and hashed, and its figures.
type Fingerprint struct {
	Rows        int64
	ContentHash string
	Figures     []tally.CloseFigure
}

// MonthFingerprint reads the fingerprint of period p from src through the
// same month_usage the workbook reads.
func MonthFingerprint(ctx context.Context, src Source, p Period) (Fingerprint, error) {
	var fp Fingerprint
	if err := p.validate(); err != nil {
		return fp, fmt.Errorf("fingerprint: %w", err)
	}
	b := &builder{ctx: ctx, src: src, p: p, opts: Options{Tolerance: DefaultTolerance}}
	err := b.each("close_fingerprint", func(r *sql.Rows) error {
		return r.Scan(&fp.Rows, &fp.ContentHash)
	})
	if err != nil {
		return fp, fmt.Errorf("fingerprint %s: %w", p.Month.Format(monthLayout), err)
	}
	err = b.each("close_figures", func(r *sql.Rows) error {
		var f tally.CloseFigure
		var project, pm, unit sql.NullString
		if err := r.Scan(&f.Organization, &project, &f.MeterName, &pm, &f.Currency, &f.Rows, &f.Cost, &f.Billed, &f.Effective, &f.Quantity, &unit); err != nil {
			return err
		}
		f.Project, f.PaymentMethod, f.Unit = project.String, pm.String, unit.String
		fp.Figures = append(fp.Figures, f)
		return nil
	})
	if err != nil {
		return fp, fmt.Errorf("fingerprint %s: %w", p.Month.Format(monthLayout), err)
	}
	return fp, nil
}

// FinalPath is where the seq-th close of a month writes its final workbook
// under a reports folder, beside the month's normal workbook: the first
// close dir/YYYY-MM/tally-cost-YYYY-MM-final.xlsx, a close after a reopen
// …-final-2.xlsx, and so on, so a re-close never writes over what an
// earlier close sent out. An organization's own close (org not "") writes
// beside its own workbook (OrgPath).
func FinalPath(dir string, month time.Time, org string, seq int) string {
	book := DefaultPath(dir, month)
	if org != "" {
		book = OrgPath(dir, month, org)
	}
	p := strings.TrimSuffix(book, ".xlsx") + "-final"
	if seq > 1 {
		p += "-" + strconv.Itoa(seq)
	}
	return p + ".xlsx"
}

// finalNameRE matches the names FinalPath gives.
var finalNameRE = regexp.MustCompile(`^tally-cost-\d{4}-\d{2}-final(-\d+)?\.xlsx$`)

// IsFinalName reports whether a file name is one only a close writes.
func IsFinalName(name string) bool { return finalNameRE.MatchString(name) }
