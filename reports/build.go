package reports

import (
	"archive/zip"
	"context"
	"database/sql"
	"fmt"
	"io"
	"math"
	"time"

	"github.com/xuri/excelize/v2"

	"github.com/tally-dev/tally"
	"github.com/tally-dev/tally/configs"
	"github.com/tally-dev/tally/store"
)

// Source runs the report queries. *sql.DB satisfies it; so does *sql.Conn.
type Source interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// Options tune a workbook. The zero value is the defaults.
type Options struct {
	// Tolerance is the rate card variance, as a fraction of the expected
	// cost, past which a row is flagged (config reports.tolerance, whose
	// default is DefaultTolerance). It is used as given: 0 flags every
	// difference.
	Tolerance float64
	// DetailRowLimit is the number of data rows per Detail sheet; 0 means
	// 1,048,575 (Excel's row limit less the header row).
	DetailRowLimit int
	// Now gives the generated-at time and decides whether the month is
	// closed; nil means time.Now.
	Now func() time.Time
	// Budgets, when any, get a Budgets and forecast sheet.
	Budgets []Budget
	// Commitments, when any (the config's commitments), get a
	// Commitments sheet; without, the workbook has none.
	Commitments []tally.CommitmentTerms
	// ReportingCurrency, when set, gets the Summary and By project a
	// total converted into it at FXRates (by month YYYY-MM and currency),
	// beside the figures per currency (config reports.reporting_currency).
	ReportingCurrency string
	FXRates           map[string]map[string]configs.FXRate
	// Close, when set, makes this the month's final workbook, stamped
	// with the close that writes it (tally close). Other workbooks read
	// the month's close from month_closes.
	Close *CloseStamp
	// Allocation, when set, is the chargeback of open months (the
	// config's), in place of the one the source holds (written by the
	// last run); a closed month keeps the one its close froze. A month
	// with cost centres gets a Chargeback sheet.
	Allocation *tally.Allocation
}

// Defaults of Options and limits.
const (
	DefaultTolerance      = 0.005     // the config's default reports.tolerance
	MaxDetailRowLimit     = 1<<20 - 1 // Excel's 1,048,576 rows less the header
	detailCancelCheckRows = 1024
)

// Sheet names, in workbook order. Detail sheets past the first are named
// "Detail 2", "Detail 3"…
const (
	sheetSummary  = "Summary"
	sheetOrg      = "By organization"
	sheetProject  = "By project"
	sheetMeter    = "By meter"
	sheetPayment  = "By payment method"
	sheetRateCard = "Rate card check"
	sheetFlags    = "Flags"
	sheetDaily    = "Daily"
	sheetDetail   = "Detail"
	sheetNotes    = "Notes"
)

// Build writes the workbook for period p to w, reading every row from src
// through the queries of sql/reports. Nothing is written to w unless the
// whole workbook was built.
func Build(ctx context.Context, src Source, p Period, w io.Writer, opts Options) error {
	if err := p.validate(); err != nil {
		return fmt.Errorf("build report: %w", err)
	}
	p.Month = p.Month.UTC()
	if err := opts.normalise(); err != nil {
		return fmt.Errorf("build report: %w", err)
	}
	b, err := newBuilder(ctx, src, p, opts)
	if err != nil {
		return fmt.Errorf("build report %s: %w", p.Month.Format(monthLayout), err)
	}
	defer b.f.Close()
	if err := b.build(); err != nil {
		return fmt.Errorf("build report %s: %w", p.Month.Format(monthLayout), err)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("build report %s: %w", p.Month.Format(monthLayout), err)
	}
	// The zip goes straight to w: excelize's WriteTo would first build the
	// whole workbook in memory (a month of hourly rows is a hundred MB).
	// Sheets stay far below the 4 GB at which excelize would patch zip64
	// headers in that buffer: a Detail sheet holds at most MaxDetailRowLimit
	// rows.
	b.f.SetZipWriter(func(io.Writer) excelize.ZipWriter { return zip.NewWriter(w) })
	if _, err := b.f.WriteToBuffer(); err != nil {
		return fmt.Errorf("write report %s: %w", p.Month.Format(monthLayout), err)
	}
	return nil
}

func (o *Options) normalise() error {
	if math.IsNaN(o.Tolerance) || math.IsInf(o.Tolerance, 0) || o.Tolerance < 0 {
		return fmt.Errorf("tolerance %v is not a fraction of 0 or more, e.g. %v for 0.5 %%", o.Tolerance, DefaultTolerance)
	}
	switch {
	case o.DetailRowLimit < 0 || o.DetailRowLimit > MaxDetailRowLimit:
		return fmt.Errorf("detail row limit %d is not between 1 and %d (0 means %d)", o.DetailRowLimit, MaxDetailRowLimit, MaxDetailRowLimit)
	case o.DetailRowLimit == 0:
		o.DetailRowLimit = MaxDetailRowLimit
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return nil
}

// builder holds one workbook while it is built.
type builder struct {
	ctx    context.Context
	src    Source
	p      Period
	opts   Options
	now    time.Time  // generated at, UTC, to the second
	closed bool       // the month is over
	state  monthState // the month's close, if any
	// daysFrom and daysTo bound the days the budget and anomaly figures
	// read (dayRange); zero until first needed.
	daysFrom, daysTo time.Time
	// days is how those figures read the days (store.ReadDays).
	days store.DaysRead
	f    *excelize.File
	st   *styles

	// Gathered on the way for the Summary, which is filled last.
	rateFlags    []flagRow // rate card rows that need a look, for Flags
	flagCounts   map[flagKind]int
	detailSheets []string
	detailRows   int64
	detailTotal  int64         // the month's Detail rows, counted before they are written
	detailIn     *detailReader // the Detail rows, read ahead
	currencies   []string      // every currency of the month, sorted

	commitmentFlags []flagRow  // commitments drawn faster than they last, for Flags
	totals          []totalRow // the month's per currency, for the converted totals

	printWidths map[string]float64  // each sheet's printed width, in characters, for printSetup
	printCharts map[string][][2]int // the rows each chart of a sheet spans, for printTable
	printKeep   map[string][]int    // rows that must not end a printed page: headers, tables' titles
	printHeld   map[string]int      // data rows a sheet's tables hold, for its printed note

	charges       *[]chargeLine // the month's chargeback, once read
	hasAllocation *bool         // whether the source has the chargeback tables, once asked
	frozen        bool          // a statement's closed month: its close froze cost centres

	adjustments      []adjustmentRow   // closed months' differences, for their sheet
	group            bool              // the month's rows belong to several organizations: a group workbook
	adjustmentTotals []adjustmentTotal // and per closed month and currency, for the Summary

	budgetStatus     []budgetStatus // each budget's figures, as the Budgets sheet shows them, for the Summary
	budgetActualHead string         // and the Budgets sheet's word for the actual
}

func newBuilder(ctx context.Context, src Source, p Period, opts Options) (*builder, error) {
	now := opts.Now().UTC().Truncate(time.Second)
	f := excelize.NewFile()
	b := &builder{
		ctx:        ctx,
		src:        src,
		p:          p,
		opts:       opts,
		now:        now,
		closed:     p.closed(now),
		f:          f,
		flagCounts: map[flagKind]int{},
	}
	st, err := newStyles(f)
	if err != nil {
		f.Close()
		return nil, err
	}
	b.st = st
	return b, nil
}

// build fills every sheet. Sheets appear in the order they are created, so
// the Summary (filled last, from what the others gathered) is created
// first and Notes after the last Detail sheet.
func (b *builder) build() error {
	if err := b.f.SetSheetName("Sheet1", sheetSummary); err != nil {
		return err
	}
	if err := b.f.SetDocProps(&excelize.DocProperties{
		Title:          b.title(),
		Subject:        fmt.Sprintf("Usage cost for %s, basis %s, granularity %s", b.p.Month.Format(monthLayout), b.p.Basis, b.p.Granularity),
		Creator:        "Tally",
		LastModifiedBy: "Tally",
		Created:        b.now.Format(time.RFC3339),
		Modified:       b.now.Format(time.RFC3339),
	}); err != nil {
		return err
	}
	if err := b.readMonthState(); err != nil {
		return err
	}
	totals, err := b.summaryTotals()
	if err != nil {
		return err
	}
	b.totals = totals
	for _, t := range totals {
		b.currencies = append(b.currencies, t.currency)
	}
	if err := b.readAdjustments(); err != nil {
		return err
	}
	var orgs int64
	if err := b.each("month_organizations", func(r *sql.Rows) error { return r.Scan(&orgs) }); err != nil {
		return err
	}
	b.group = orgs > 1
	steps := []struct {
		name string
		fill func() error
	}{
		{sheetProject, b.byProject},
		{sheetMeter, b.byMeter},
		{sheetPayment, b.byPaymentMethod},
		{sheetRateCard, b.rateCardCheck},
	}
	if len(b.opts.Commitments) > 0 {
		steps = append(steps, struct {
			name string
			fill func() error
		}{sheetCommitments, b.commitments})
	}
	steps = append(steps, []struct {
		name string
		fill func() error
	}{{sheetFlags, b.flags}, {sheetDaily, b.daily}}...)
	if b.group {
		steps = append([]struct {
			name string
			fill func() error
		}{{sheetOrg, b.byOrganization}}, steps...)
	}
	if len(b.opts.Budgets) > 0 {
		steps = append([]struct {
			name string
			fill func() error
		}{{sheetBudgets, b.budgets}}, steps...)
	}
	lines, err := b.chargeback()
	if err != nil {
		return err
	}
	if len(lines) > 0 {
		steps = append(steps, struct {
			name string
			fill func() error
		}{sheetChargeback, func() error { return b.chargebackSheet(lines, totals) }}, struct {
			name string
			fill func() error
		}{sheetChargebackLines, func() error { return b.chargebackLines(lines) }})
	}
	if len(b.adjustments) > 0 {
		steps = append(steps, struct {
			name string
			fill func() error
		}{sheetAdjustments, b.adjustmentsSheet})
	}
	for _, s := range steps {
		if err := b.ctx.Err(); err != nil {
			return err
		}
		if _, err := b.f.NewSheet(s.name); err != nil {
			return err
		}
		if err := s.fill(); err != nil {
			return fmt.Errorf("sheet %s: %w", s.name, err)
		}
		if err := b.printTable(s.name); err != nil {
			return err
		}
	}
	// Before the Detail sheets: SetActiveSheet reads every sheet back, and
	// would parse a streamed sheet's rows still in memory (a small month's
	// whole Detail sheet) into cells.
	b.f.SetActiveSheet(0)
	if err := b.detail(); err != nil {
		return fmt.Errorf("sheet %s: %w", sheetDetail, err)
	}
	if err := b.ctx.Err(); err != nil {
		return err
	}
	if _, err := b.f.NewSheet(sheetNotes); err != nil {
		return err
	}
	if err := b.notes(); err != nil {
		return fmt.Errorf("sheet %s: %w", sheetNotes, err)
	}
	if err := b.summary(totals); err != nil {
		return fmt.Errorf("sheet %s: %w", sheetSummary, err)
	}
	if err := b.printTable(sheetNotes); err != nil {
		return err
	}
	return b.printSetup(sheetSummary, 0)
}

// EstimatedWarning is what every workbook of basis estimated says of its
// figures, in its title, Summary and Notes.
const EstimatedWarning = "estimated from the rate card: not an invoice"

// title is the workbook's document title.
func (b *builder) title() string {
	if b.p.Basis == tally.BasisEstimated {
		return "Tally cost workbook " + b.p.Month.Format(monthLayout) + " (" + EstimatedWarning + ")"
	}
	return "Tally cost workbook " + b.p.Month.Format(monthLayout)
}
