package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/tally-dev/tally"
	"github.com/tally-dev/tally/configs"
	"github.com/tally-dev/tally/ingest"
)

func init() { commands = append(commands, newPlanCmd) }

// clock is where plan and fetch read "now"; tests replace it to play
// later nights.
var clock = time.Now

func newPlanCmd(g *globalFlags) *cobra.Command {
	var cfgPath, from, to, gran, format, asOfText string
	var refetch bool
	cmd := &cobra.Command{
		Use:   "plan --config FILE [--from DATE] [--to DATE] [--granularity G] [--refetch] [--as-of DATE] [--format table|json]",
		Short: "Print the windows a fetch would request; sends nothing",
		Long: "Print the windows the next `tally fetch` with the same flags would request, and why\n" +
			"each is due (backfill, missing, partial, lookback, refetch). It reads the ledger of the\n" +
			"analysts' published copy without taking the writer's lock, so it may run while a\n" +
			"fetch does (what that fetch loads shows once it ends). Nothing is sent to the\n" +
			"interface. Dates are YYYY-MM-DD, UTC; --to is exclusive and defaults to tomorrow,\n" +
			"--from to the config's usage.start.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if format != "table" && format != "json" {
				return usageErr("--format %q is not one of table, json", format)
			}
			opts, err := fetchOptions(from, to, gran, refetch)
			if err != nil {
				return err
			}
			asOf, err := resolveAsOf(asOfText)
			if err != nil {
				return err
			}
			cfg, err := loadConfig(cfgPath)
			if err != nil {
				return err
			}
			if cfg.Usage.Source == tally.SourceProjects {
				// The per-project report takes no dates: there is nothing
				// to plan, and an empty plan would read as "all loaded".
				if format == "json" {
					_, err := fmt.Fprintln(cmd.OutOrStdout(), "[]")
					return err
				}
				n, list := projectNames(cfg)
				_, err := fmt.Fprintf(cmd.OutOrStdout(), "usage.source projects: a fetch reads the month to date of %d project(s) (%s), one request each; the report takes no date windows\n", n, list)
				return err
			}
			if cfg.Usage.Source == tally.SourceLake {
				// The lake's changed partitions are known only to the
				// catalog, at the fetch: no date windows to plan.
				if format == "json" {
					_, err := fmt.Fprintln(cmd.OutOrStdout(), "[]")
					return err
				}
				_, err := fmt.Fprintf(cmd.OutOrStdout(), "usage.source lake: a fetch loads, for %d organization(s), the partitions of the lake's table %s.usage whose files changed since their last load; there are no interface windows to plan\n",
					len(cfg.Organizations), cfg.Lake.Namespace)
				return err
			}
			now := today(asOf)
			if _, err := opts.Resolve(cfg, now); err != nil {
				return usageError{err}
			}
			rep, err := ingest.Plan(cmd.Context(), cfg, opts, now)
			if err != nil {
				return err
			}
			if log, err := newLogger(g, os.Stderr); err == nil && rep.Ledger != "" {
				log.Debug().Str("ledger", rep.Ledger).Time("written", rep.LedgerAt).Msg("plan read the loaded windows")
			}
			if format == "json" {
				return writePlanJSON(cmd.OutOrStdout(), rep.Windows)
			}
			return writePlanTable(cmd.OutOrStdout(), rep.Windows)
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfgPath, "config", "", "config file (YAML)")
	f.StringVar(&from, "from", "", "first day, YYYY-MM-DD (default: usage.start)")
	f.StringVar(&to, "to", "", "day after the last, YYYY-MM-DD (default: tomorrow, UTC)")
	f.StringVar(&gran, "granularity", "", "hour, day, week, month or year (default usage.granularity)")
	f.StringVar(&format, "format", "table", "output: table or json")
	addAsOf(cmd, &asOfText)
	f.BoolVar(&refetch, "refetch", false, "plan [--from, --to) again even where it is loaded, as tally fetch --refetch (needs both)")
	return cmd
}

// planJSON is one window of `tally plan --format json`, as INTERFACE.md
// documents it.
type planJSON struct {
	Organization string `json:"organization,omitempty"` // with organizations: configured
	Start        string `json:"start"`
	End          string `json:"end"`
	Granularity  string `json:"granularity"`
	Reason       string `json:"reason"`
}

// writePlanJSON prints one JSON array, one window object a line, so the
// output is both valid JSON and easy to read or grep.
func writePlanJSON(w io.Writer, windows []tally.PlannedWindow) error {
	var b bytes.Buffer
	b.WriteString("[")
	for i, pw := range windows {
		line, err := json.Marshal(planJSON{
			Organization: pw.Organization,
			Start:        pw.Start.Format(tally.DateLayout),
			End:          pw.End.Format(tally.DateLayout),
			Granularity:  string(pw.Granularity),
			Reason:       pw.Reason,
		})
		if err != nil {
			return fmt.Errorf("encode plan: %w", err)
		}
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString("\n  ")
		b.Write(line)
	}
	if len(windows) > 0 {
		b.WriteString("\n")
	}
	b.WriteString("]\n")
	_, err := w.Write(b.Bytes())
	return err
}

func windowDays(w tally.Window) int {
	return int(w.End.Sub(w.Start) / (24 * time.Hour))
}

func writePlanTable(w io.Writer, windows []tally.PlannedWindow) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	grouped := len(windows) > 0 && windows[0].Organization != ""
	if grouped {
		fmt.Fprint(tw, "ORGANIZATION\t")
	}
	fmt.Fprintln(tw, "START\tEND\tGRANULARITY\tDAYS\tREASON")
	total := 0
	for _, pw := range windows {
		days := windowDays(pw.Window)
		total += days
		if grouped {
			fmt.Fprintf(tw, "%s\t", pw.Organization)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\n", pw.Start.Format(tally.DateLayout), pw.End.Format(tally.DateLayout), pw.Granularity, days, pw.Reason)
	}
	noun := "windows"
	if len(windows) == 1 {
		noun = "window"
	}
	fmt.Fprintf(tw, "total: %d %s, %d days\n", len(windows), noun, total)
	return tw.Flush()
}

// projectNames counts and lists the projects a usage.source projects
// fetch reads: a group's by organization ("emea: newsroom, archive; us:
// newsroom").
func projectNames(cfg *configs.Config) (int, string) {
	if !cfg.Grouped() {
		return len(cfg.Usage.ProjectNames), strings.Join(cfg.Usage.ProjectNames, ", ")
	}
	n, parts := 0, []string{}
	for _, o := range cfg.Organizations {
		n += len(o.ProjectNames)
		parts = append(parts, o.Name+": "+strings.Join(o.ProjectNames, ", "))
	}
	return n, strings.Join(parts, "; ")
}
