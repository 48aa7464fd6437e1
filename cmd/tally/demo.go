package main

import (
	"fmt"
	"os"
	"strings"
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
			began := time.Now()
			res, err := schedules.Demo(cmd.Context(), dir, log, version, began)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "\nDemo done in %s.\n", time.Since(began).Round(time.Millisecond))
			fmt.Fprintf(out, "  workbook:        %s\n", res.Workbook)
			fmt.Fprintf(out, "  database:        %s\n", res.Database)
			fmt.Fprintf(out, "  analysts' copy:  %s\n", res.Published)
			fmt.Fprintf(out, "  config:          %s\n", res.Config)
			fmt.Fprintf(out, "  fetched:         %d windows, %d rows, %d requests\n",
				res.Nightly.Fetch.Loaded, res.Nightly.Fetch.Rows, res.Nightly.Fetch.Requests)
			cfg := shellQuote(res.Config)
			// Each counts every charge once: usage holds every granularity
			// and basis loaded, so a sum straight over it counts a charge
			// once for each.
			fmt.Fprintf(out, "\nThree queries to try:\n")
			fmt.Fprintf(out, "  go run ./cmd/tally query --config %s \"SELECT project, currency, sum(cost) AS cost FROM usage_finest WHERE basis = 'usage' GROUP BY ALL ORDER BY ALL\"\n", cfg)
			fmt.Fprintf(out, "  go run ./cmd/tally query --config %s --name cost_by_project_month\n", cfg)
			fmt.Fprintf(out, "  go run ./cmd/tally query --config %s --format csv \"SELECT * FROM fetch_windows ORDER BY start\"\n", cfg)
			return nil
		},
	}
	cmd.Flags().StringVar(&dir, "dir", "tally-demo", "folder for the demo's config, database and workbook")
	return cmd
}

// shellQuote makes a path safe to paste into a POSIX shell: as it is when it
// holds only characters no shell treats specially, else in single quotes.
func shellQuote(s string) string {
	safe := s != ""
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("@%+=:,./_-", r)) {
			safe = false
			break
		}
	}
	if safe {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
