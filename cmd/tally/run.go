package main

import (
	"fmt"

	"github.com/spf13/cobra"
)

func init() { commands = append(commands, newRunCmd) }

func newRunCmd(g *globalFlags) *cobra.Command {
	var cfgPath string
	cmd := &cobra.Command{
		Use:   "run --config FILE",
		Short: "The nightly job: fetch, then the configured reports",
		Long: `Fetches the due windows and reference data, then writes the workbooks of
reports.months (by default the previous month, final, and the current month to
date), all under one run id. Exit 3 when some windows failed after all
retries: the workbooks are still written and the next run fetches the rest.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			r, err := newRunner(cmd, g, cfgPath)
			if err != nil {
				return err
			}
			sum, err := r.Nightly(cmd.Context(), nil)
			printFetchSummary(cmd, sum.Fetch)
			for _, w := range sum.Reports {
				fmt.Fprintf(cmd.OutOrStdout(), "report %s: %s\n", w.Month.Format("2006-01"), w.Path)
			}
			return err
		},
	}
	cmd.Flags().StringVar(&cfgPath, "config", "", "config file (YAML)")
	return cmd
}
