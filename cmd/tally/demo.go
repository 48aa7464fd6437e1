package main

import (
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/tally-dev/tally/schedules"
)

func init() { commands = append(commands, newDemoCmd) }

func newDemoCmd(g *globalFlags) *cobra.Command {
	var dir string
	cmd := &cobra.Command{
		Use:   "demo [--dir DIR]",
		Short: "Run the whole nightly path against the built-in simulated interface",
		Long: `Starts the simulated management interface on loopback, fetches its usage
and reference data into a fresh DuckDB file, and writes the cost workbook of
the last full month. Everything stays in --dir.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			log, err := newLogger(g, os.Stderr)
			if err != nil {
				return err
			}
			res, err := schedules.Demo(cmd.Context(), dir, log, version, time.Now())
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "\nDemo done in %s.\n", res.Nightly.Fetch.Duration.Round(time.Millisecond))
			fmt.Fprintf(out, "  workbook:        %s\n", res.Workbook)
			fmt.Fprintf(out, "  database:        %s\n", res.Database)
			fmt.Fprintf(out, "  analysts' copy:  %s\n", res.Published)
			fmt.Fprintf(out, "  config:          %s\n", res.Config)
			fmt.Fprintf(out, "  fetched:         %d windows, %d rows, %d requests\n",
				res.Nightly.Fetch.Loaded, res.Nightly.Fetch.Rows, res.Nightly.Fetch.Requests)
			fmt.Fprintf(out, "\nThree queries to try:\n")
			fmt.Fprintf(out, "  go run ./cmd/tally query --config %s \"SELECT project, currency, sum(cost) AS cost FROM usage GROUP BY ALL ORDER BY ALL\"\n", res.Config)
			fmt.Fprintf(out, "  go run ./cmd/tally query --config %s --name cost_by_project_month\n", res.Config)
			fmt.Fprintf(out, "  go run ./cmd/tally query --config %s --format csv \"SELECT * FROM fetch_windows ORDER BY start\"\n", res.Config)
			return nil
		},
	}
	cmd.Flags().StringVar(&dir, "dir", "tally-demo", "folder for the demo's config, database and workbook")
	return cmd
}
