package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/tally-dev/tally/configs"
	"github.com/tally-dev/tally/fetch"
)

func init() { commands = append(commands, newPlanCmd) }

// planLedger returns the windows already loaded for the config's
// granularity, basis and scope. The store's ledger plugs in here; until
// then a plan is what a first fetch would request.
var planLedger = func(ctx context.Context, cfg *configs.Config) ([]fetch.LoadedWindow, error) {
	return nil, nil
}

// planNow is the clock plan reads "today" from; tests replace it.
var planNow = time.Now

type planOptions struct {
	config string
	from   string
	to     string
	format string
}

func newPlanCmd(g *globalFlags) *cobra.Command {
	o := &planOptions{}
	cmd := &cobra.Command{
		Use:   "plan --config FILE [--from DATE] [--to DATE] [--format table|json]",
		Short: "Print the windows a fetch would request; sends nothing",
		Long: "Print the windows a fetch would request, and why each is due (backfill, missing,\n" +
			"partial, lookback). Nothing is sent to the interface. Dates are YYYY-MM-DD, UTC;\n" +
			"--to is exclusive and defaults to tomorrow, --from to the config's usage.start.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runPlan(cmd.Context(), o, cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.config, "config", "", "config file (YAML)")
	f.StringVar(&o.from, "from", "", "first day, YYYY-MM-DD (default: usage.start)")
	f.StringVar(&o.to, "to", "", "day after the last, YYYY-MM-DD (default: tomorrow, UTC)")
	f.StringVar(&o.format, "format", "table", "output: table or json")
	return cmd
}

func runPlan(ctx context.Context, o *planOptions, w io.Writer) error {
	if o.config == "" {
		return usageErr("--config is required: the config file to plan for (see configs/tally.example.yaml)")
	}
	if o.format != "table" && o.format != "json" {
		return usageErr("--format %q is not one of table, json", o.format)
	}
	var from, to time.Time
	var err error
	if o.from != "" {
		if from, err = fetch.ParseDate(o.from); err != nil {
			return usageErr("--from: %w", err)
		}
	}
	if o.to != "" {
		if to, err = fetch.ParseDate(o.to); err != nil {
			return usageErr("--to: %w", err)
		}
	}
	cfg, err := loadConfig(o.config)
	if err != nil {
		return err
	}
	now := planNow().UTC()
	if o.from == "" {
		from = cfg.Usage.Start
	}
	if o.to == "" {
		to = fetch.Day.Truncate(now).AddDate(0, 0, 1)
	}
	if !to.After(from) {
		return usageErr("--to %s must be after --from %s (--to is exclusive)", to.Format(fetch.DateLayout), from.Format(fetch.DateLayout))
	}
	loaded, err := planLedger(ctx, cfg)
	if err != nil {
		return fmt.Errorf("read loaded windows: %w", err)
	}
	windows, err := fetch.Plan(fetch.PlanInput{
		From:        from,
		To:          to,
		Granularity: cfg.Usage.Granularity,
		Size:        cfg.Usage.Window,
		Loaded:      loaded,
		Lookback:    cfg.Usage.Lookback,
		Now:         now,
	})
	if err != nil {
		return err
	}
	if o.format == "json" {
		return writePlanJSON(w, windows)
	}
	return writePlanTable(w, windows)
}

// planJSON is one window of `tally plan --format json`, as INTERFACE.md
// documents it.
type planJSON struct {
	Start       string `json:"start"`
	End         string `json:"end"`
	Granularity string `json:"granularity"`
	Reason      string `json:"reason"`
}

// writePlanJSON prints one JSON array, one window object a line, so the
// output is both valid JSON and easy to read or grep.
func writePlanJSON(w io.Writer, windows []fetch.PlannedWindow) error {
	var b bytes.Buffer
	b.WriteString("[")
	for i, pw := range windows {
		line, err := json.Marshal(planJSON{
			Start:       pw.Start.Format(fetch.DateLayout),
			End:         pw.End.Format(fetch.DateLayout),
			Granularity: string(pw.Granularity),
			Reason:      pw.Reason,
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

func windowDays(w fetch.Window) int {
	return int(w.End.Sub(w.Start) / (24 * time.Hour))
}

func writePlanTable(w io.Writer, windows []fetch.PlannedWindow) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "START\tEND\tGRANULARITY\tDAYS\tREASON")
	total := 0
	for _, pw := range windows {
		days := windowDays(pw.Window)
		total += days
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\n", pw.Start.Format(fetch.DateLayout), pw.End.Format(fetch.DateLayout), pw.Granularity, days, pw.Reason)
	}
	noun := "windows"
	if len(windows) == 1 {
		noun = "window"
	}
	fmt.Fprintf(tw, "total: %d %s, %d days\n", len(windows), noun, total)
	return tw.Flush()
}
