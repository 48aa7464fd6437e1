package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/rs/zerolog"
	"github.com/spf13/cobra"

	"github.com/tally-dev/tally"
	"github.com/tally-dev/tally/reports"
	"github.com/tally-dev/tally/schedules"
)

func init() { commands = append(commands, newReportCmd) }

type reportOptions struct {
	config string
	month  string
	org    string
	basis  string
	out    string
	// chargeback: also one statement per cost centre (--chargeback).
	chargeback bool
	asOf       string
	log        zerolog.Logger
}

func newReportCmd(g *globalFlags) *cobra.Command {
	o := &reportOptions{}
	cmd := &cobra.Command{
		Use:   "report --config FILE --month YYYY-MM [--org NAME] [--basis usage|reported|estimated] [--out FILE.xlsx] [--chargeback] [--as-of DATE]",
		Short: "Write a month's cost workbook (Excel) from the stored usage",
		Long: `Write one month's cost workbook: summary, cost by project, meter and payment
method, the rate card check, flagged items, the daily trend, every usage row,
and notes on what each column means. Amounts are per currency, never added
across currencies.

The workbook reads the analysts' published copy of the config's database
(which every tally fetch refreshes), so it never waits for a running fetch.
--basis defaults to the config's usage.reported_date (reported when true,
usage otherwise; estimated with usage.source projects, whose rows are
priced from the rate card); the rows read are those of the config's usage.granularity
when it serves months (hour, day, month). Week and year buckets cross month
boundaries: for them the finest loaded hour, day or month data covering the
month is read (with a warning), or tally refuses (exit 2) and says what to
fetch. A month with no rows — never loaded, before any fetch, or at a basis
the config does not load — is refused (exit 2, nothing written), saying what
to set or run.
--out defaults to <reports.dir>/YYYY-MM/tally-cost-YYYY-MM.xlsx. The file is
written beside its final name and renamed into place: an interrupted run
leaves the previous workbook, never half of a new one.
With allocation configured, the workbook has a Chargeback sheet; --chargeback
also writes one statement per cost centre, a small workbook of its own
projects and meters and the shared costs it received and why, to
<reports.dir>/YYYY-MM/tally-chargeback-YYYY-MM-<cost centre>.xlsx.`,
		Example: `  tally report --config tally.yaml --month 2026-10
  tally report --config tally.yaml --month 2026-10 --basis reported --out october-invoiced.xlsx
  tally report --config tally.yaml --month 2026-10 --chargeback`,
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
	f.StringVar(&o.org, "org", "", "one organization's workbook (organizations[].name); default: every organization's, with a By organization sheet when there are several")
	f.StringVar(&o.basis, "basis", "", "usage (when usage happened), reported (when charged, as invoices count) or estimated (usage.source projects: quantities priced from the rate card); default from usage.reported_date and usage.source")
	f.StringVar(&o.out, "out", "", "workbook to write, .xlsx (default <reports.dir>/YYYY-MM/tally-cost-YYYY-MM.xlsx)")
	addAsOf(cmd, &o.asOf)
	f.BoolVar(&o.chargeback, "chargeback", false, "also write one chargeback statement per cost centre (allocation.cost_centres)")
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
	var basis tally.Basis
	switch o.basis {
	case "":
	case string(tally.BasisUsage), string(tally.BasisReported), string(tally.BasisEstimated):
		basis = tally.Basis(o.basis)
	default:
		return usageErr("--basis %q is not one of usage, reported, estimated", o.basis)
	}
	if o.out != "" && !strings.EqualFold(filepath.Ext(o.out), ".xlsx") {
		return usageErr("--out %q must end in .xlsx: spreadsheet programs open a workbook by its extension", o.out)
	}
	asOf, err := resolveAsOf(o.asOf)
	if err != nil {
		return err
	}
	cfg, err := loadConfig(o.config)
	if err != nil {
		return err
	}
	if o.org != "" {
		org, err := cfg.Organization(o.org)
		if err != nil {
			return usageError{err}
		}
		o.org = org.Name
	}
	if o.chargeback && cfg.Allocation.Empty() {
		return usageErr("--chargeback: the config has no allocation.cost_centres, so there is no cost centre to write a statement for; add them (see configs/tally.example.yaml, allocation)")
	}
	out := o.out
	switch {
	case out != "":
	case o.org != "":
		out = reports.OrgPath(cfg.Reports.Dir, month, o.org)
	default:
		out = reports.DefaultPath(cfg.Reports.Dir, month)
	}
	st, err := schedules.OpenPublished(ctx, cfg, o.log)
	if err != nil {
		return fmt.Errorf("report %s: %w", o.month, err)
	}
	defer st.Close()
	// A replay's Budgets sheet is as of the replay's morning.
	src, release, err := st.AsOfSource(ctx, asOf)
	if err != nil {
		return fmt.Errorf("report %s: %w", o.month, err)
	}
	defer release()
	p, err := schedules.ReportOrg(ctx, cfg, src, month, basis, o.org, out, todayFunc(asOf), o.log)
	if err != nil {
		return err
	}
	if _, err = fmt.Fprintf(w, "wrote %s (%s, basis %s, granularity %s)\n", out, o.month, p.Basis, p.Granularity); err != nil {
		return err
	}
	if !o.chargeback {
		return nil
	}
	sts, err := schedules.Statements(ctx, cfg, src, p, todayFunc(asOf), o.log)
	for _, s := range sts {
		if _, werr := fmt.Fprintf(w, "wrote %s (statement of %s)\n", s.Path, s.CostCentre); werr != nil {
			return werr
		}
	}
	return err
}
