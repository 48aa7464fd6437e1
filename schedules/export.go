package schedules

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/tally-dev/tally/configs"
	"github.com/tally-dev/tally/job"
	"github.com/tally-dev/tally/reports"
	"github.com/tally-dev/tally/store"
)

func init() { job.Register("export", exportStep) }

// exportStep is the export step of a scheduled job (run: [fetch, report,
// export]): the config's export section, from the database the job's run
// holds, so the export shows what the run just loaded.
func exportStep(ctx context.Context, env *job.Env, _ uuid.UUID) (job.Result, error) {
	sum, err := Export(ctx, env, ExportOptions{})
	var res job.Result
	if sum.Dir != "" {
		res.Outputs = []string{sum.Dir}
	}
	return res, err
}

// ExportOptions narrow one export. Zero values take the config's export
// section; Format "" is export.format, CSV nil is export.focus_csv,
// CSVRaw nil export.csv_raw.
type ExportOptions struct {
	Dir    string
	Format string // configs.ExportParquet or configs.ExportFOCUS
	CSV    *bool  // format focus: also write every FOCUS dataset as CSV
	// CSVRaw, when set, overrides export.csv_raw: the CSV's text as it
	// is, without the formula guard.
	CSVRaw *bool
	// FOCUSVersion is store.FOCUS13 (also when empty) or store.FOCUS12.
	FOCUSVersion string
	// From and Until (exclusive) limit the usage months written: every
	// month overlapping [From, Until), whole. Zero is unbounded.
	From, Until time.Time
}

// ExportSummary is what one export did.
type ExportSummary struct {
	store.ExportResult
	Source string // the database file exported
}

// Export writes the store's data to the export folder (see store.Export):
// Parquet tables Hive-partitioned by month, or the usage as FinOps FOCUS
// (1.3 unless opts asks for 1.2). FOCUS maps the rows of the config's usage.granularity and basis,
// the ones the workbooks count, so each charge is exported once.
func Export(ctx context.Context, env *job.Env, opts ExportOptions) (ExportSummary, error) {
	cfg := env.Config
	o := store.ExportOptions{Dir: opts.Dir, Format: opts.Format, From: opts.From, Until: opts.Until, FOCUSVersion: opts.FOCUSVersion, Now: env.Now}
	if o.Dir == "" {
		o.Dir = cfg.Export.Dir
	}
	if o.Format == "" {
		o.Format = cfg.Export.Format
	}
	switch {
	case opts.CSV != nil:
		o.CSV = *opts.CSV
	default:
		// export.focus_csv applies to format focus only; with format
		// parquet it is not an error, just nothing to do.
		o.CSV = cfg.Export.FOCUSCSV && o.Format == configs.ExportFOCUS
	}
	o.CSVRaw = cfg.Export.CSVRaw
	if opts.CSVRaw != nil {
		o.CSVRaw = *opts.CSVRaw
	}
	if o.Format == configs.ExportFOCUS {
		// FOCUS billing periods are months: a week or year bucket would be
		// billed whole in one month.
		if !reports.ServesMonths(cfg.Usage.Granularity) {
			return ExportSummary{Source: env.Store.Path()}, &reports.GranularityError{Field: "usage.granularity",
				Granularity: cfg.Usage.Granularity, Basis: cfg.DefaultBasis(), Output: "the FOCUS export"}
		}
		o.Granularity = cfg.Usage.Granularity
		o.Basis = cfg.DefaultBasis()
	}
	res, err := env.Store.Export(ctx, o)
	sum := ExportSummary{ExportResult: res, Source: env.Store.Path()}
	for _, d := range res.Datasets {
		env.Log.Info().Str("dataset", d.Name).Int("written", len(d.Written)).Int("unchanged", len(d.Unchanged)).
			Int("removed", len(d.Removed)).Int64("rows", d.Rows).Int64("bytes", d.Bytes).Msg("exported")
	}
	if err != nil {
		return sum, err
	}
	env.Log.Info().Str("dir", res.Dir).Str("format", res.Format).Dur("duration", res.Duration.Round(time.Millisecond)).Msg("export finished")
	return sum, nil
}

// Export is `tally export`. It reads the analysts' published copy, not the
// database: an export only reads, so it needs neither the writer lock nor
// the API token, it never waits for (or holds up) a running fetch, and it
// sees what the last run published, as tally report and tally query do.
// Two exports into one folder are kept apart by the folder's own lock. A
// scheduled job's export step instead exports the database its run holds,
// before the run publishes.
func (r *Runner) Export(ctx context.Context, opts ExportOptions) (ExportSummary, error) {
	st, err := OpenPublished(ctx, r.Config, r.Log)
	if err != nil {
		return ExportSummary{}, fmt.Errorf("export: %w", err)
	}
	defer st.Close()
	env := &job.Env{Config: r.Config, Store: st, Log: r.Log, Clock: r.Now}
	return Export(ctx, env, opts)
}
