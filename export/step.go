package export

import (
	"context"
	"time"

	"github.com/google/uuid"

	"github.com/tally-dev/tally/configs"
	"github.com/tally-dev/tally/job"
	"github.com/tally-dev/tally/reports"
)

func init() { job.Register("export", step) }

// step is the export step of a scheduled job (run: [fetch, report,
// export]): the config's export section, from the database the job's run
// holds, so the export shows what the run just loaded.
func step(ctx context.Context, env *job.Env, runID uuid.UUID) (job.Result, error) {
	sum, err := Run(ctx, env, Request{RunID: runID})
	var res job.Result
	if sum.Dir != "" {
		res.Outputs = []string{sum.Dir}
	}
	return res, err
}

// Request narrows one export. Zero values take the config's export
// section; Format "" is export.format, CSV nil is export.focus_csv,
// CSVRaw nil export.csv_raw.
type Request struct {
	Dir    string
	Format string // configs.ExportParquet, configs.ExportFOCUS or configs.ExportIceberg
	CSV    *bool  // format focus: also write every FOCUS dataset as CSV
	// CSVRaw, when set, overrides export.csv_raw: the CSV's text as it
	// is, without the formula guard.
	CSVRaw *bool
	// FOCUSVersion is FOCUS13 (also when empty) or FOCUS12.
	FOCUSVersion string
	// From and Until (exclusive) limit the usage months written: every
	// month overlapping [From, Until), whole. Zero is unbounded.
	From, Until time.Time
	// RunID is the run exporting, which format iceberg's snapshots name.
	RunID uuid.UUID
}

// Summary is what one export did.
type Summary struct {
	Result
	Source string // the database file exported
}

// Run writes the store's data to the export folder (see Write):
// Parquet tables Hive-partitioned by month, or the usage as FinOps FOCUS
// (1.3 unless opts asks for 1.2). FOCUS maps the rows of the config's usage.granularity and basis,
// the ones the workbooks count, so each charge is exported once.
func Run(ctx context.Context, env *job.Env, opts Request) (Summary, error) {
	cfg := env.Config
	o := Options{Dir: opts.Dir, Format: opts.Format, From: opts.From, Until: opts.Until, FOCUSVersion: opts.FOCUSVersion, Now: env.Now}
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
	if o.Format == configs.ExportIceberg {
		return runLake(ctx, env, o.Dir, opts)
	}
	if o.Format == configs.ExportFOCUS {
		// FOCUS billing periods are months: a week or year bucket would be
		// billed whole in one month.
		if !reports.ServesMonths(cfg.Usage.Granularity) {
			return Summary{Source: env.Store.Path()}, &reports.GranularityError{Field: "usage.granularity",
				Granularity: cfg.Usage.Granularity, Basis: cfg.DefaultBasis(), Output: "the FOCUS export"}
		}
		o.Granularity = cfg.Usage.Granularity
		o.Basis = cfg.DefaultBasis()
		o.Commitments = cfg.Commitments
	}
	res, err := Write(ctx, env.Store, o)
	sum := Summary{Result: res, Source: env.Store.Path()}
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
