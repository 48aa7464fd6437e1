package export

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/rs/zerolog"

	"github.com/tally-dev/tally/configs"
	"github.com/tally-dev/tally/job"
	"github.com/tally-dev/tally/lake"
)

// FormatIceberg commits the usage table to the lake's Iceberg table
// (lake/): only the (organization, month) partitions that changed.
const FormatIceberg = configs.ExportIceberg

// StagingDir is where an export to a warehouse on S3 writes its files
// before tally-lake uploads them, in the export folder dir's lake folder.
func StagingDir(dir string) string { return filepath.Join(dir, configs.LakeDir, "staging") }

// runLake is Run for format iceberg. Its snapshots name the run (the
// job's, or tally export's own) and this Tally's version; the changes it
// commits are those of the database at the config's store.path, whose
// published copy tally export reads.
func runLake(ctx context.Context, env *job.Env, dir string, opts Request) (Summary, error) {
	sum := Summary{Source: env.Store.Path()}
	sum.Format = FormatIceberg
	if !opts.From.IsZero() || !opts.Until.IsZero() || opts.CSV != nil && *opts.CSV || opts.FOCUSVersion != "" {
		return sum, errors.New("export: format iceberg commits the usage partitions that changed; --from, --until, --csv and --focus-version do not apply")
	}
	lc, err := lake.ConfigFor(env.Config, dir)
	if err != nil {
		return sum, err
	}
	sum.Dir = filepath.Dir(lc.Warehouse)
	if lake.OnS3(lc.Warehouse) {
		sum.Dir = lc.Warehouse
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return sum, fmt.Errorf("export: %w", err)
	}
	res, err := CommitLake(ctx, env.Store, LakeOptions{
		Config: lc, Source: env.Config.Store.Path, RunID: opts.RunID.String(), Version: env.Version, Staging: StagingDir(abs),
	}, env.Log)
	if err != nil {
		// Only the error: a failed export committed nothing it could
		// name.
		return sum, err
	}
	d := DatasetResult{Name: res.Table, Partition: "organization, month", Rows: res.Rows, Snapshot: res.Commit.SnapshotID}
	for _, p := range res.Partitions {
		d.Written = append(d.Written, p.Organization+"/"+p.Month.Format("2006-01"))
	}
	sum.Datasets = []DatasetResult{d}
	sum.Duration = res.Duration
	return sum, nil
}

// MaintainLake runs tally lake maintain on the lake of the export folder
// dir: the usage table's snapshots older than lake.keep_snapshots expire
// (never the current one), and files no snapshot holds older than
// lake.orphan_age are deleted; with dry, it only says what it would do.
func MaintainLake(ctx context.Context, cfg *configs.Config, dir string, dry bool, log zerolog.Logger) (lake.Maintained, error) {
	lc, err := lake.ConfigFor(cfg, dir)
	if err != nil {
		return lake.Maintained{}, err
	}
	helper, err := lake.FindHelper()
	if err != nil {
		return lake.Maintained{}, err
	}
	var m lake.Maintained
	err = lake.Call(ctx, helper, lake.Request{Op: "maintain", Catalog: lc, Table: lake.UsageTable,
		KeepSnapshots: cfg.Lake.KeepSnapshots, OrphanAge: cfg.Lake.OrphanAge, DryRun: dry}, &m, log)
	return m, err
}
