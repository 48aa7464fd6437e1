package main

import (
	"errors"
	"fmt"
	"os"
	"os/user"

	"github.com/spf13/cobra"

	"github.com/tally-dev/tally/closes"
	"github.com/tally-dev/tally/configs"
	"github.com/tally-dev/tally/job"
	"github.com/tally-dev/tally/reports"
)

func init() { commands = append(commands, newCloseCmd) }

type closeOptions struct {
	config string
	month  string
	org    string
	reason string
	reopen bool
	asOf   string
}

func newCloseCmd(g *globalFlags) *cobra.Command {
	o := &closeOptions{}
	cmd := &cobra.Command{
		Use:   "close --config FILE --month YYYY-MM [--org NAME] [--reason TEXT] [--reopen] [--as-of DATE]",
		Short: "Close a month: write its final workbook once and record its fingerprint",
		Long: `Close a month for finance: write its final workbook,
<reports.dir>/YYYY-MM/tally-cost-YYYY-MM-final.xlsx, which is never written
again, and record in month_closes who closed it, when, why, and the month's
fingerprint (rows, usage value per currency, a hash of its rows). The
month's figures per project, meter, payment method and currency are kept
in month_close_figures.

Late charges for a closed month are still loaded; they are adjustments,
not restatements: closed_month_adjustments shows them, every workbook
written while there are any has an "Adjustments to closed months" sheet,
and the FOCUS view keeps the closed month as closed, with the late charges
as Correction rows in the month Tally loaded them.

A month is refused (exit 2, nothing changed) when it is not over, when a
day of it has no loaded window at the config's granularity and basis, or
when it is already closed. --reopen reopens a closed month; --reason is
then required, and the reopen is its own row in month_closes.

With organizations: in the config, a close without --org closes every
organization's month at once, or refuses naming the one that is not
ready or already closed: it writes each organization's final workbook,
<reports.dir>/YYYY-MM/NAME/tally-cost-YYYY-MM-final.xlsx, and the
group's. --org NAME closes (or reopens) that organization's month alone,
with its own final workbook; the others stay as they are.

tally close is a writer: it takes the database's lock like tally fetch,
and publishes the analysts' copy after. A close that is recorded but whose
final workbook cannot be put in place, or whose copy cannot be published (a
full disk), exits 3 saying what is not done; closing the month again puts
the file in place or publishes the copy, rather than refusing it as closed.`,
		Example: `  tally close --config tally.yaml --month 2026-10 --reason "October signed off"
  tally close --config tally.yaml --month 2026-10 --reopen --reason "credit note 4711 from the provider"
  tally close --config group.yaml --month 2026-10 --org emea --reason "EMEA signed off"`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.config == "" {
				return usageErr("--config is required: the config file whose data to close (see configs/tally.example.yaml)")
			}
			if o.month == "" {
				return usageErr("--month is required: the month to close, YYYY-MM")
			}
			month, err := reports.ParseMonth(o.month)
			if err != nil {
				return usageErr("--month: %w", err)
			}
			asOf, err := resolveAsOf(o.asOf)
			if err != nil {
				return err
			}
			r, err := newRunner(cmd, g, o.config, only("close"), configs.Shard{})
			if err != nil {
				return err
			}
			r = withAsOf(r, asOf)
			sum, err := closes.Close(cmd.Context(), r, r.Config, closes.CloseOptions{Month: month, Org: o.org, Reason: o.reason, Who: who(), Reopen: o.reopen})
			var refused *closes.RefusedError
			if errors.As(err, &refused) {
				return usageErr("close %s: %w", o.month, err)
			}
			// A close recorded whose copy was not published is said as
			// done, and the error then says what is not (exit 3).
			if err != nil && !errors.As(err, new(*job.Partial)) {
				return fmt.Errorf("close %s: %w", o.month, err)
			}
			out := cmd.OutOrStdout()
			if o.org != "" {
				fmt.Fprintf(out, "organization: %s\n", o.org)
			}
			switch {
			case sum.Republished:
				fmt.Fprintf(out, "%s was already closed %s UTC by %s (final workbook %s); the analysts' copy did not show it yet\n",
					o.month, sum.Close.At.Format("2006-01-02 15:04"), sum.Close.Who, sum.Close.FinalWorkbook)
			case o.reopen:
				fmt.Fprintf(out, "reopened %s (basis %s, granularity %s) by %s: %s\n", o.month, sum.Close.Basis, sum.Close.Granularity, sum.Close.Who, sum.Close.Reason)
			default:
				fmt.Fprintf(out, "closed %s (basis %s, granularity %s) by %s\nfinal workbook: %s\ncontent hash: %s\n",
					o.month, sum.Close.Basis, sum.Close.Granularity, sum.Close.Who, sum.Close.FinalWorkbook, sum.Close.ContentHash)
				for _, oc := range sum.Organizations {
					fmt.Fprintf(out, "organization %s: final workbook %s, content hash %s\n", oc.Organization, oc.FinalWorkbook, oc.ContentHash)
				}
			}
			if sum.Published != "" {
				fmt.Fprintf(out, "analysts' copy: %s\n", sum.Published)
			}
			if err != nil {
				done := "closed"
				if o.reopen {
					done = "reopened"
				}
				return fmt.Errorf("close %s: the month is %s and recorded; not done yet:\n%w", o.month, done, err)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.config, "config", "", "config file (YAML)")
	f.StringVar(&o.month, "month", "", "month to close or reopen, YYYY-MM (UTC)")
	f.StringVar(&o.org, "org", "", "close or reopen this organization's month alone (organizations[].name); default every organization at once")
	f.StringVar(&o.reason, "reason", "", "why; recorded in month_closes (required with --reopen)")
	f.BoolVar(&o.reopen, "reopen", false, "reopen a closed month instead of closing it")
	addAsOf(cmd, &o.asOf)
	return cmd
}

// who names the person closing a month: $USER, else the account's name.
func who() string {
	if u := os.Getenv("USER"); u != "" {
		return u
	}
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username
	}
	return "unknown"
}
