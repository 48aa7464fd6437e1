package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/rs/zerolog"
	"github.com/spf13/cobra"

	"github.com/tally-dev/tally/fetch"
	"github.com/tally-dev/tally/reports"
	"github.com/tally-dev/tally/schedules"
)

func init() { commands = append(commands, newReportCmd) }

type reportOptions struct {
	config string
	month  string
	basis  string
	out    string
	log    zerolog.Logger
}

func newReportCmd(g *globalFlags) *cobra.Command {
	o := &reportOptions{}
	cmd := &cobra.Command{
		Use:   "report --config FILE --month YYYY-MM [--basis usage|reported] [--out FILE.xlsx]",
		Short: "Write a month's cost workbook (Excel) from the stored usage",
		Long: `Write one month's cost workbook: summary, cost by project, meter and payment
method, the rate card check, flagged items, the daily trend, every usage row,
and notes on what each column means. Amounts are per currency, never added
across currencies.

The workbook reads the analysts' published copy of the config's database
(which every tally fetch refreshes), so it never waits for a running fetch.
--basis defaults to the config's usage.reported_date (reported when true,
usage otherwise); the rows read are those of the config's usage.granularity
when it serves months (hour, day, month). Week and year buckets cross month
boundaries: for them the finest loaded hour, day or month data covering the
month is read (with a warning), or tally refuses (exit 2) and says what to
fetch.
--out defaults to <reports.dir>/YYYY-MM/tally-cost-YYYY-MM.xlsx. The file is
written beside its final name and renamed into place: an interrupted run
leaves the previous workbook, never half of a new one.`,
		Example: `  tally report --config tally.yaml --month 2026-10
  tally report --config tally.yaml --month 2026-10 --basis reported --out october-invoiced.xlsx`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			log, err := newLogger(g, os.Stderr)
			if err != nil {
				return err
			}
			o.log = log
			return runReport(cmd.Context(), o, cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.config, "config", "", "config file (YAML)")
	f.StringVar(&o.month, "month", "", "month to report, YYYY-MM (UTC)")
	f.StringVar(&o.basis, "basis", "", "usage (when usage happened) or reported (when charged, as invoices count); default from usage.reported_date")
	f.StringVar(&o.out, "out", "", "workbook to write, .xlsx (default <reports.dir>/YYYY-MM/tally-cost-YYYY-MM.xlsx)")
	return cmd
}

func runReport(ctx context.Context, o *reportOptions, w io.Writer) error {
	if o.config == "" {
		return usageErr("--config is required: the config file whose data to report (see configs/tally.example.yaml)")
	}
	if o.month == "" {
		return usageErr("--month is required: the month to report, YYYY-MM")
	}
	month, err := reports.ParseMonth(o.month)
	if err != nil {
		return usageErr("--month: %w", err)
	}
	var basis fetch.Basis
	switch o.basis {
	case "":
	case string(fetch.BasisUsage), string(fetch.BasisReported):
		basis = fetch.Basis(o.basis)
	default:
		return usageErr("--basis %q is not one of usage, reported", o.basis)
	}
	if o.out != "" && !strings.EqualFold(filepath.Ext(o.out), ".xlsx") {
		return usageErr("--out %q must end in .xlsx: spreadsheet programs open a workbook by its extension", o.out)
	}
	cfg, err := loadConfig(o.config)
	if err != nil {
		return err
	}
	if basis == "" {
		basis = fetch.BasisUsage
		if cfg.Usage.ReportedDate {
			basis = fetch.BasisReported
		}
	}
	out := o.out
	if out == "" {
		out = reports.DefaultPath(cfg.Reports.Dir, month)
	}
	st, err := schedules.OpenPublished(ctx, cfg, o.log, false)
	if err != nil {
		return fmt.Errorf("report %s: %w", o.month, err)
	}
	defer st.Close()
	p := reports.Period{Month: month, Basis: basis, Granularity: cfg.Usage.Granularity}
	g, note, err := reports.MonthGranularity(ctx, st.DB(), p, "usage.granularity", time.Now())
	if err != nil {
		return fmt.Errorf("report %s: %w", o.month, err)
	}
	if note != "" {
		o.log.Warn().Msg(note)
	}
	p.Granularity = g
	n, err := reports.MonthRows(ctx, st.DB(), p)
	if err != nil {
		return fmt.Errorf("report %s: %w", o.month, err)
	}
	if n == 0 {
		return emptyMonthError{month: o.month, basis: string(basis), granularity: string(g)}
	}
	if err := reports.WriteFile(ctx, st.DB(), p, out, reports.Options{Tolerance: cfg.Reports.Tolerance}); err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "wrote %s (%s, basis %s, granularity %s)\n", out, o.month, basis, g)
	return err
}

// emptyMonthError is a month with no usage rows for the basis and
// granularity: no workbook is written (an empty one would look like a month
// that cost nothing), and the exit is 3, partial.
type emptyMonthError struct{ month, basis, granularity string }

func (e emptyMonthError) Error() string {
	return fmt.Sprintf("report %s: no usage rows for %s at basis %s and granularity %s, so no workbook was written; fetch the month first (tally fetch), or check usage.granularity and --basis against tally status", e.month, e.month, e.basis, e.granularity)
}

func (emptyMonthError) Partial() bool { return true }
