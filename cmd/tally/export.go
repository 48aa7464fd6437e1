package main

import (
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/tally-dev/tally"
	"github.com/tally-dev/tally/configs"
	"github.com/tally-dev/tally/export"
	"github.com/tally-dev/tally/job"
	"github.com/tally-dev/tally/schedules"
	"github.com/tally-dev/tally/store"
)

func init() { commands = append(commands, newExportCmd) }

type exportOptions struct {
	config string
	to     []string
	format string
	csv    bool
	csvRaw bool
	focus  string
	from   string
	until  string
}

func newExportCmd(g *globalFlags) *cobra.Command {
	o := &exportOptions{}
	cmd := &cobra.Command{
		Use:   "export --config FILE [--to DIR] [--format parquet|focus|iceberg] [--focus-version 1.3|1.2] [--csv] [--csv-raw] [--from DATE] [--until DATE]",
		Short: "Write the data as Parquet (Hive-partitioned by month), as FinOps FOCUS rows, or to an Iceberg table",
		Long: `Write the analysts' published copy of the config's database to a folder
other tools read as it is (DuckDB, Spark, Trino, BigQuery external tables):

  --format parquet  usage and the reference snapshot tables, one folder each,
                    Hive-partitioned by month: usage/month=2026-10/data_0.parquet
  --format focus    the usage as FinOps FOCUS 1.3 Cost and Usage rows:
                    focus/billing_period=2026-10/data_0.parquet; the
                    entitlements as a Contract Commitment dataset
                    (focus_contract_commitment/); the FOCUS metadata
                    (_focus_metadata.json: recency, completeness, version).
                    With --csv, every dataset also as CSV: focus_csv/ and
                    focus_contract_commitment_csv/.
                    --focus-version 1.2 writes the 1.2 rows of the focus
                    view instead, as before 1.3.
  --format iceberg  the usage table committed to the Apache Iceberg table
                    usage in namespace lake.namespace (default tally) of
                    the lake's catalog (lake.catalog; by default an
                    embedded SQLite catalog, DIR/lake/catalog.db, beside
                    the warehouse DIR/lake/warehouse), partitioned by
                    organization and month: only the partitions the loads
                    changed since the last commit are replaced, and
                    nothing is committed when none changed.

In the CSV, a text value that begins with =, +, -, @, tab or carriage return
is written with a single quote ahead, so a spreadsheet shows it as text
instead of running it as a formula (project and payment method names come
from the interface, where any project member sets them); numbers are never
changed. --csv-raw (default export.csv_raw) writes text as it is, for
programs that read the files.

--to DIR is the output folder (default export.dir). The months written can
be limited with --from and --until (YYYY-MM-DD, UTC, --until exclusive):
every month overlapping that span is written whole. A --to that looks like
a date is refused unless another --to names the folder: then it is the end
date, like --to of tally fetch:
  tally export --config FILE --to DIR --from 2026-10-01 --to 2026-11-01

Each month is written under a temporary name and renamed into place. A
manifest (_tally_manifest.json) keeps each month's fingerprint; a rerun
writes only the months whose data changed and removes the months no longer
in the data. No API token is needed, and a running fetch is neither waited
for nor held up.`,
		Example: `  tally export --config tally.yaml --to /srv/lake/tally
  tally export --config tally.yaml --format focus --csv
  tally export --config tally.yaml --from 2026-10-01 --until 2026-11-01`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runExport(cmd, g, o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.config, "config", "", "config file (YAML)")
	f.StringArrayVar(&o.to, "to", nil, "output folder (default export.dir); beside a --to DIR, a second --to holding a YYYY-MM-DD date is the end date, like --until")
	f.StringVar(&o.format, "format", "", "parquet, focus or iceberg (default export.format)")
	f.BoolVar(&o.csv, "csv", false, "format focus: also write every FOCUS dataset as CSV (default export.focus_csv)")
	f.BoolVar(&o.csvRaw, "csv-raw", false, "the CSV's text as it is, without the quote that keeps a spreadsheet from running =, +, -, @ as a formula (default export.csv_raw)")
	f.StringVar(&o.focus, "focus-version", "", "format focus: the FOCUS version, 1.3 or 1.2 (default 1.3)")
	f.StringVar(&o.from, "from", "", "first day whose month is written, YYYY-MM-DD (default: every month)")
	f.StringVar(&o.until, "until", "", "day after the last, YYYY-MM-DD, exclusive (default: every month)")
	return cmd
}

var dateLikeRE = regexp.MustCompile(`^[0-9]{4}-[0-9]{2}-[0-9]{2}$`)

// splitTo sorts the --to values into the output folder and the end date:
// INTERFACE.md gives export both a `--to DIR` and a `--to DATE`.
func splitTo(o *exportOptions) (dir string, err error) {
	folders := 0
	for _, v := range o.to {
		if !dateLikeRE.MatchString(v) {
			folders++
		}
	}
	for _, v := range o.to {
		switch {
		case dateLikeRE.MatchString(v) && folders == 0:
			// --to of fetch and plan is an end date; here it names the
			// output folder. Taken alone as a date it would export every
			// month before it into export.dir, which nobody asked for.
			return "", usageErr("--to %q looks like a date, but --to of tally export is the output folder: give the end date with --until %s (exclusive), and the folder, if not export.dir, with --to DIR", v, v)
		case dateLikeRE.MatchString(v) && o.until == "":
			o.until = v
		case dateLikeRE.MatchString(v):
			return "", usageErr("--to %q and --until %q both give the end date: give one", v, o.until)
		case dir != "":
			return "", usageErr("--to %q and --to %q both name the output folder: give one", dir, v)
		default:
			dir = v
		}
	}
	return dir, nil
}

func runExport(cmd *cobra.Command, g *globalFlags, o *exportOptions) error {
	dir, err := splitTo(o)
	if err != nil {
		return err
	}
	var opts export.Request
	switch o.format {
	case "", configs.ExportParquet, configs.ExportFOCUS, configs.ExportIceberg:
		opts.Format = o.format
	default:
		return usageErr("--format %q is not one of parquet, focus, iceberg", o.format)
	}
	if o.from != "" {
		if opts.From, err = tally.ParseDate(o.from); err != nil {
			return usageErr("--from: %v", err)
		}
	}
	if o.until != "" {
		if opts.Until, err = tally.ParseDate(o.until); err != nil {
			return usageErr("--until: %v", err)
		}
	}
	if !opts.From.IsZero() && !opts.Until.IsZero() && !opts.Until.After(opts.From) {
		return usageErr("--until %s must be after --from %s (--until is exclusive)", o.until, o.from)
	}
	switch o.focus {
	case "", export.FOCUS13, export.FOCUS12:
		opts.FOCUSVersion = o.focus
	default:
		return usageErr("--focus-version %q is not one of %s, %s", o.focus, export.FOCUS13, export.FOCUS12)
	}
	cfg, err := loadConfig(o.config)
	if err != nil {
		return err
	}
	format := opts.Format
	if format == "" {
		format = cfg.Export.Format
	}
	if format == configs.ExportIceberg && (o.from != "" || o.until != "") {
		return usageErr("--from and --until do not apply to --format iceberg: it commits the usage partitions the loads changed")
	}
	if format == configs.ExportIceberg {
		// The catalog's password and the S3 keys, read before anything
		// is written.
		if err := cfg.Lake.CheckSecrets(os.Getenv); err != nil {
			return usageError{err}
		}
	}
	if o.focus != "" && format != configs.ExportFOCUS {
		return usageErr("--focus-version %s applies to FOCUS rows: use it with --format focus", o.focus)
	}
	if cmd.Flags().Changed("csv") {
		if o.csv && format != configs.ExportFOCUS {
			return usageErr("--csv writes FOCUS rows as CSV: use it with --format focus")
		}
		opts.CSV = &o.csv
	}
	if cmd.Flags().Changed("csv-raw") {
		if o.csvRaw && format != configs.ExportFOCUS {
			return usageErr("--csv-raw applies to the FOCUS CSV: use it with --format focus")
		}
		opts.CSVRaw = &o.csvRaw
	}
	opts.Dir = dir
	log, err := newLogger(g, os.Stderr)
	if err != nil {
		return err
	}
	for _, w := range cfg.Warnings {
		log.Warn().Msg(w)
	}
	// tally export reads the analysts' published copy, not the database:
	// an export only reads, so it needs neither the writer lock nor the
	// API token, it never waits for (or holds up) a running fetch, and it
	// sees what the last run published, as tally report and tally query
	// do. Two exports into one folder are kept apart by the folder's own
	// lock. A scheduled job's export step instead exports the database its
	// run holds, before the run publishes.
	st, err := schedules.OpenPublished(cmd.Context(), cfg, log)
	if err != nil {
		return fmt.Errorf("export: %w", err)
	}
	defer st.Close()
	// The export's own run id, which an iceberg snapshot names: tally
	// export reads the published copy and records no run in it.
	opts.RunID = store.NewRunID()
	sum, err := export.Run(cmd.Context(), &job.Env{Config: cfg, Store: st, Log: log, Version: version}, opts)
	printExportSummary(cmd.OutOrStdout(), sum)
	return err
}

func printExportSummary(w io.Writer, s export.Summary) {
	if s.Dir == "" {
		return
	}
	fmt.Fprintf(w, "export %s (format %s) from %s\n", s.Dir, s.Format, s.Source)
	for _, d := range s.Datasets {
		if s.Format == configs.ExportIceberg {
			line := fmt.Sprintf("  %-27s nothing changed since the last commit; nothing committed", d.Name)
			if d.Snapshot != 0 {
				line = fmt.Sprintf("  %-27s %d partition(s) replaced in snapshot %d; %d rows (%s)",
					d.Name, len(d.Written), d.Snapshot, d.Rows, strings.Join(d.Written, ", "))
			}
			fmt.Fprintln(w, line)
			continue
		}
		line := fmt.Sprintf("  %-27s %d month(s) written, %d unchanged, %d removed; %d rows, %d bytes written",
			d.Name, len(d.Written), len(d.Unchanged), len(d.Removed), d.Rows, d.Bytes)
		if len(d.Written) > 0 {
			line += " (" + strings.Join(d.Written, ", ") + ")"
		}
		fmt.Fprintln(w, line)
	}
	if s.Duration > 0 {
		fmt.Fprintf(w, "time: %s\n", s.Duration.Round(time.Millisecond))
	}
}
