package main

import (
	"context"
	"errors"
	"fmt"
	"text/tabwriter"

	"github.com/google/uuid"
	"github.com/spf13/cobra"

	"github.com/tally-dev/tally/alerts"
	"github.com/tally-dev/tally/configs"
	"github.com/tally-dev/tally/job"
	"github.com/tally-dev/tally/schedules"
)

func init() { commands = append(commands, newAlertsCmd) }

func newAlertsCmd(g *globalFlags) *cobra.Command {
	var config, asOfText string
	var dryRun bool
	cmd := &cobra.Command{
		Use:   "alerts --config FILE [--dry-run] [--as-of DATE]",
		Short: "Check budgets and cost anomalies and send the alerts not yet sent",
		Long: `Checks every budget of the config against the current month's actual and
forecast cost, and looks for cost anomalies (a project's meter costing far
more on a day than the 28 days before), on the usage already loaded. Each
threshold crossing and each anomaly is recorded once in the alerts table
and sent once: to the log, and to alerts.webhook when set. A send that
fails is tried again by the next run, which is then partial (exit 3).

Every tally fetch ends with the same check; this command runs it on its
own. With --dry-run it reads the analysts' copy and lists what would be
sent now, changing and sending nothing.

See docs/finance.md "Budgets and alerts" for the forecast and anomaly methods.`,
		Example: `  tally alerts --config tally.yaml --dry-run
  tally alerts --config tally.yaml`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if config == "" {
				return usageErr("--config is required: the config file whose budgets to check (see configs/tally.example.yaml)")
			}
			asOf, err := resolveAsOf(asOfText)
			if err != nil {
				return err
			}
			// A dry run reads the analysts' copy and sends nothing: it
			// needs no secret.
			steps := only("alerts")
			if dryRun {
				steps = only()
			}
			r, err := newRunner(cmd, g, config, steps, configs.Shard{})
			if err != nil {
				return err
			}
			sum, err := alertsRun(cmd.Context(), withAsOf(r, asOf), dryRun)
			out := cmd.OutOrStdout()
			if len(sum.Check.Budgets) > 0 {
				tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
				fmt.Fprintln(tw, "budget\tscope\tmonth\tamount\tactual\t%\tforecast\t%\tthrough")
				for _, b := range sum.Check.Budgets {
					if !b.Found {
						fmt.Fprintf(tw, "%s\t%s\t\t%s %s\tno usage in %s\t\t\t\t\n", b.Budget.Name, b.Budget.ScopeText(), b.Budget.Amount, b.Budget.Currency, b.Budget.Currency)
						continue
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s %s\t%s\t%.1f\t%s\t%.1f\t%s\n", b.Budget.Name, b.Budget.ScopeText(), b.Month.Format("2006-01"),
						b.Budget.Amount, b.Budget.Currency, b.Actual, b.ActualRatio()*100, b.Forecast, b.ForecastRatio()*100, b.Through.Label())
				}
				tw.Flush()
			}
			if dryRun {
				fmt.Fprintf(out, "\n%d alert(s) would be sent now:\n", len(sum.ToSend))
				for _, a := range sum.ToSend {
					fmt.Fprintf(out, "  %s\n", a.Text)
				}
				return err
			}
			fmt.Fprintf(out, "\n%d new alert(s):\n", len(sum.Check.New))
			for _, a := range sum.Check.New {
				note := ""
				if a.Status != "pending" {
					note = " (" + a.Status + ": found more than a week after its day, recorded, not sent)"
				}
				fmt.Fprintf(out, "  %s%s\n", a.Text, note)
			}
			if sum.Published != "" {
				fmt.Fprintf(out, "analysts' copy: %s\n", sum.Published)
			}
			return err
		},
	}
	cmd.Flags().StringVar(&config, "config", "", "config file (YAML)")
	addAsOf(cmd, &asOfText)
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "list what would be sent, from the analysts' copy; change and send nothing")
	return cmd
}

// alertsSummary is what `tally alerts` found.
type alertsSummary struct {
	Check alerts.Check
	// ToSend are the alerts a dry run would send now: those still pending
	// from earlier runs and the new ones that are news.
	ToSend []alerts.Alert
	// Published is the analysts' copy, after a run that sent.
	Published string
}

// alertsRun is `tally alerts`: the budget and anomaly check a fetch ends
// with, on what is already loaded, as one recorded run on r. With dryRun
// it reads the analysts' copy and lists what would be sent, writing and
// sending nothing.
func alertsRun(ctx context.Context, r *schedules.Runner, dryRun bool) (alertsSummary, error) {
	var sum alertsSummary
	if dryRun {
		st, err := schedules.OpenPublished(ctx, r.Config, r.Log)
		if err != nil {
			return sum, err
		}
		defer st.Close()
		if sum.Check, err = alerts.Evaluate(ctx, st, r.Config, uuid.Nil, r.Today(), r.AsOf, false); err != nil {
			return sum, err
		}
		sum.ToSend, err = alerts.ToSend(ctx, st, sum.Check)
		return sum, err
	}
	published, err := r.RecordStep(ctx, "alerts", func(ctx context.Context, env *job.Env, runID uuid.UUID) (job.Result, error) {
		var err error
		sum.Check, err = alerts.CheckAndSend(ctx, env, runID)
		if errors.As(err, new(*alerts.SendError)) {
			err = job.StepErrors(err)
		}
		return job.Result{}, err
	})
	sum.Published = published
	return sum, err
}
