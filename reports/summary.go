package reports

import (
	"database/sql"
	"fmt"
	"strconv"
	"strings"

	"github.com/xuri/excelize/v2"

	"github.com/tally-dev/tally"
)

// totalRow is one currency's usage value for the month.
type totalRow struct {
	currency string
	rows     int64
	split    categorySplit
}

func (b *builder) summaryTotals() ([]totalRow, error) {
	var out []totalRow
	err := b.each("summary_totals", func(r *sql.Rows) error {
		var t totalRow
		if err := r.Scan(append([]any{&t.currency, &t.rows}, t.split.dests()...)...); err != nil {
			return err
		}
		out = append(out, t)
		return nil
	})
	return out, err
}

// summary fills the Summary sheet, last, from what the other sheets
// gathered.
func (b *builder) summary(totals []totalRow) error {
	s := &summaryWriter{b: b, row: 1}
	if err := b.setWidths(sheetSummary, summaryColumns); err != nil {
		return err
	}
	month := b.p.Month
	title := "Tally cost workbook: usage of " + month.Format("January 2006")
	if b.p.Basis == tally.BasisEstimated {
		title = "Tally cost workbook, " + EstimatedWarning + ": usage of " + month.Format("January 2006")
	}
	if err := s.put(cell{title, b.st.title}); err != nil {
		return err
	}
	s.row++
	basis := "usage: usage that happened in the month (by sample date)"
	switch b.p.Basis {
	case tally.BasisReported:
		basis = "reported: usage charged in the month (by processing date), as invoices count it"
	case tally.BasisEstimated:
		basis = "estimated: " + EstimatedWarning + ". Each project's own usage report (quantities, read day by day) priced at its payment method's rate card"
	}
	lines := [][]cell{
		{b.label("Month"), b.txt(month.Format(monthLayout))},
		{b.label("First day"), {month, b.st.date}},
		{b.label("Last day"), {b.p.end().AddDate(0, 0, -1), b.st.date}},
		{b.label("Basis"), b.txt(basis)},
		{b.label("Granularity"), b.txt(string(b.p.Granularity))},
		{b.label(monthStatusLabel), b.txt(b.monthStatus())},
	}
	switch {
	case b.p.Organization != "":
		lines = append(lines[:1], append([][]cell{{b.label("Organization"), b.txt(b.p.Organization)}}, lines[1:]...)...)
	case b.group:
		lines = append(lines[:1], append([][]cell{{b.label("Organizations"), b.txt("every organization of the group: see By organization")}}, lines[1:]...)...)
	}
	lines = append(lines, b.closeLines()...)
	lines = append(lines, []cell{b.label("Generated at (UTC)"), {b.now, b.st.dateTime}})
	if err := s.lines(lines); err != nil {
		return err
	}
	// The month's story first (story.go), then the money as a controller
	// reads it: totals and how they are paid, then what needs a look; then
	// how fresh the data is; the run that wrote the workbook last, for
	// whoever supports it.
	if err := s.story(); err != nil {
		return err
	}
	if err := s.totals(totals); err != nil {
		return err
	}
	if err := s.converted(totals); err != nil {
		return err
	}
	if err := s.adjustments(); err != nil {
		return err
	}
	if err := s.entitlements(); err != nil {
		return err
	}
	if err := s.flagCounts(); err != nil {
		return err
	}
	run, err := s.freshness()
	if err != nil {
		return err
	}
	if err := s.detail(); err != nil {
		return err
	}
	if err := s.section("Produced by (for support)"); err != nil {
		return err
	}
	return s.lines(run)
}

func (b *builder) label(s string) cell { return cell{s, b.st.label} }

// summaryWriter writes the Summary top to bottom.
type summaryWriter struct {
	b   *builder
	row int
}

// summaryColumns are the Summary's widths: the labels' column, then as
// narrow as the longest value of each column ("(entitlement without a
// type)", "Drawn from a balance", an amount in the millions) so the sheet
// prints one page wide; headers wrap.
var summaryColumns = []column{{"", 38}, {"", 22}, {"", 28}, {"", 15}, {"", 15}, {"", 15}, {"", 15}}

func (s *summaryWriter) put(cells ...cell) error {
	err := s.b.putRow(sheetSummary, s.row, cells...)
	if err == nil && len(cells) == 2 {
		err = s.wrapLong(cells[1])
	}
	s.row++
	return err
}

// wrapLong spreads a label's text that is wider than its column over the
// rest of the row and wraps it there, so a long line (the basis, the
// month's status, a run's error) prints whole on the page rather than
// running past its right edge.
func (s *summaryWriter) wrapLong(c cell) error {
	text, ok := c.v.(string)
	if !ok || c.style != s.b.st.text || float64(len(text)) < summaryColumns[1].width-1 {
		return nil
	}
	last, err := excelize.CoordinatesToCellName(len(summaryColumns), s.row)
	if err != nil {
		return err
	}
	first := fmt.Sprintf("B%d", s.row)
	if err := s.b.f.MergeCell(sheetSummary, first, last); err != nil {
		return err
	}
	if err := s.b.f.SetCellStyle(sheetSummary, first, last, s.b.st.wrap); err != nil {
		return err
	}
	lines := wrappedLines(text, columnsWidth(summaryColumns[1:]), false)
	if lines == 1 {
		return nil
	}
	return s.b.f.SetRowHeight(sheetSummary, s.row, float64(lines)*lineHeight)
}

func (s *summaryWriter) lines(lines [][]cell) error {
	for _, l := range lines {
		if err := s.put(l...); err != nil {
			return err
		}
	}
	return nil
}

// section starts a titled block one blank row below the last.
func (s *summaryWriter) section(title string) error {
	s.row++
	return s.put(cell{title, s.b.st.section})
}

func (s *summaryWriter) header(titles ...string) error {
	cells := make([]cell, len(titles))
	for i, t := range titles {
		cells[i] = cell{t, s.b.st.header}
	}
	return s.put(cells...)
}

// freshness writes the Data freshness block and returns the lines about
// the last run, which the Summary puts last.
func (s *summaryWriter) freshness() ([][]cell, error) {
	b := s.b
	if err := s.section("Data freshness"); err != nil {
		return nil, err
	}
	var (
		wStart, wEnd, wFetched, oldest, firstStart, lastEnd, started, finished sql.NullTime
		scope, runID, command, status, runErr                                  sql.NullString
		wRows                                                                  sql.NullInt64
		windows                                                                int64
	)
	err := b.each("summary_freshness", func(r *sql.Rows) error {
		return r.Scan(&wStart, &wEnd, &scope, &wRows, &wFetched, &oldest, &firstStart, &lastEnd, &windows,
			&runID, &command, &status, &started, &finished, &runErr)
	})
	if err != nil {
		return nil, err
	}
	var lines, run [][]cell
	if windows == 0 {
		lines = append(lines, []cell{b.label("Last loaded window"),
			b.txt("None: no usage window of this granularity and basis was loaded for this month.")})
	} else {
		lines = append(lines,
			[]cell{b.label("Last loaded window, first day"), b.day(wStart)},
			[]cell{b.label("Last loaded window, end (exclusive)"), b.day(wEnd)},
			[]cell{b.label("Last loaded window, scope"), b.nstr(scope)},
			[]cell{b.label("Last loaded window, rows"), b.count(wRows.Int64)},
			[]cell{b.label("Last loaded window fetched at (UTC)"), b.stamp(wFetched)},
			[]cell{b.label("Windows loaded for this month"), b.count(windows)},
			[]cell{b.label("Loaded windows cover from"), b.day(firstStart)},
			[]cell{b.label("Loaded windows cover until (exclusive)"), b.day(lastEnd)},
			[]cell{b.label("Oldest fetch among them (UTC)"), b.stamp(oldest)},
		)
	}
	if !runID.Valid {
		run = append(run, []cell{b.label("Last run"), b.txt("None recorded.")})
	} else {
		run = append(run,
			[]cell{b.label("Last run id"), b.nstr(runID)},
			[]cell{b.label("Last run command"), b.nstr(command)},
			[]cell{b.label("Last run status"), b.nstr(runStatusText(status))},
			[]cell{b.label("Last run started (UTC)"), b.stamp(started)},
			[]cell{b.label("Last run finished (UTC)"), b.stamp(finished)},
		)
		if runErr.Valid && runErr.String != "" {
			run = append(run, []cell{b.label("Last run error"), b.nstr(runErr)})
		}
	}
	return run, s.lines(lines)
}

func (s *summaryWriter) totals(totals []totalRow) error {
	b := s.b
	if err := s.section(totalsSection); err != nil {
		return err
	}
	if err := s.header("Currency", "Rows", "Billed directly", "Drawn from a balance", "Covered by a license",
		"Other entitlement types", "Total usage value"); err != nil {
		return err
	}
	if len(totals) == 0 {
		return s.put(b.txt(emptyPeriod))
	}
	for _, t := range totals {
		cells, err := b.splitCells(t.split, t.currency)
		if err != nil {
			return err
		}
		if err := s.put(append([]cell{b.txt(t.currency), b.count(t.rows)}, cells...)...); err != nil {
			return err
		}
	}
	return nil
}

func (s *summaryWriter) entitlements() error {
	b := s.b
	if err := s.section("Usage value per entitlement type, as the provider names it"); err != nil {
		return err
	}
	if err := s.header("Currency", "Paid as", "Entitlement type (as sent)", "Rows", "Usage value"); err != nil {
		return err
	}
	n := 0
	err := b.each("summary_entitlements", func(r *sql.Rows) error {
		var (
			currency, category string
			entType            sql.NullString
			rows               int64
			cost               money
		)
		if err := r.Scan(&currency, &category, &entType, &rows, &cost); err != nil {
			return err
		}
		c, err := b.value(cost, currency)
		if err != nil {
			return err
		}
		name := b.nstr(entType)
		if !entType.Valid {
			name = b.txt("(no entitlement)")
			if category == "other" {
				name = b.txt("(entitlement without a type)")
			}
		}
		n++
		return s.put(b.txt(currency), b.txt(categoryLabel(category)), name, b.count(rows), c)
	})
	if err != nil {
		return err
	}
	if n == 0 {
		return s.put(b.txt(emptyPeriod))
	}
	return nil
}

func (s *summaryWriter) flagCounts() error {
	b := s.b
	if err := s.section("Flagged items (see the Flags sheet for what to do)"); err != nil {
		return err
	}
	if err := s.header("Kind", "Items", "Listed on"); err != nil {
		return err
	}
	for _, k := range flagKinds {
		where := sheetFlags
		switch k {
		case flagRateVariance, flagNoPrice, flagSeveralPrices, flagCurrencyDiffers:
			where = sheetFlags + ", " + sheetRateCard
		case flagCommitmentRunsOut:
			if len(b.opts.Commitments) == 0 {
				continue // no commitments configured: nothing to count
			}
			where = sheetFlags + ", " + sheetCommitments
		}
		if err := s.put(b.txt(k.label()), b.count(int64(b.flagCounts[k])), b.txt(where)); err != nil {
			return err
		}
	}
	return nil
}

func (s *summaryWriter) detail() error {
	b := s.b
	if err := s.section("Detail"); err != nil {
		return err
	}
	lines := [][]cell{
		{b.label("Usage rows in the month"), b.count(b.detailRows)},
		{b.label("Detail sheets"), b.count(int64(len(b.detailSheets)))},
		{b.label("Detail sheet names"), b.txt(strings.Join(b.detailSheets, ", "))},
	}
	if len(b.detailSheets) > 1 {
		lines = append(lines, []cell{b.label("Why several"), b.txt(fmt.Sprintf(
			"A Detail sheet holds at most %s rows; the rows continue, in order, on %s.",
			strconv.Itoa(b.opts.DetailRowLimit), strings.Join(b.detailSheets[1:], ", ")))})
	}
	return s.lines(lines)
}

// runStatusText words a run's status for the reader. A workbook written by
// `tally run` sees its own run still running: say so rather than leave
// finance wondering whether something hung.
func runStatusText(status sql.NullString) sql.NullString {
	if status.Valid && status.String == "running" {
		status.String = "running: this workbook was written during that run; tally status shows how it ended"
	}
	return status
}
