package export

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/tally-dev/tally"
	"github.com/tally-dev/tally/configs"
	"github.com/tally-dev/tally/internal/atomicfile"
	tallysql "github.com/tally-dev/tally/sql"
	"github.com/tally-dev/tally/store"
)

// This file is long (about 880 lines) because an export's crash safety
// lives in the order of its steps (stage, fingerprint, write the manifest,
// rename), which reads best in one place.

// Export formats.
const (
	// FormatParquet writes the usage table and the reference snapshot
	// tables as they are in the database.
	FormatParquet = "parquet"
	// FormatFOCUS writes the usage as FinOps FOCUS rows: Cost and Usage
	// (at 1.3 by default, built on the focus view of sql/views, which is
	// the 1.2 mapping), and at 1.3 a Contract Commitment dataset and the
	// FOCUS metadata (FOCUSMetadataName).
	FormatFOCUS = "focus"
)

// Options say what Export writes and where.
type Options struct {
	Dir    string // the export folder; created when missing
	Format string // FormatParquet or FormatFOCUS
	// From and Until (exclusive) limit the usage (and FOCUS) months
	// written: every month overlapping [From, Until), whole. Zero means
	// unbounded. Reference snapshots are always exported whole: a month's
	// rate card in force may have been taken before it.
	From, Until time.Time
	// CSV also writes every FOCUS dataset as CSV (format focus only).
	CSV bool
	// CSVRaw writes the CSV's text as it is; by default a text value that
	// a spreadsheet would run as a formula is written with a quote ahead
	// (CSVGuard).
	CSVRaw bool
	// Granularity and Basis select the usage rows FOCUS maps, so each
	// charge is counted once; required for format focus.
	Granularity tally.Granularity
	Basis       tally.Basis
	// FOCUSVersion is FOCUS13 (also when empty) or FOCUS12, which writes
	// the focus view's rows exactly as before 1.3.
	FOCUSVersion string
	// Commitments are the config's commitments (FOCUS 1.3 only): the
	// amounts and periods of the Contract Commitment rows whose
	// entitlement they name. None: every amount null, as the interface
	// gives none.
	Commitments []configs.Commitment
	Now         func() time.Time // the manifest's written_at; nil = time.Now
}

// Result says what one Export did.
type Result struct {
	Dir      string // absolute
	Format   string
	Datasets []DatasetResult
	Duration time.Duration
}

// DatasetResult is one folder of the export: a table, Hive-partitioned by
// month.
type DatasetResult struct {
	Name      string   // the folder: usage, focus, payment_method_snapshots, …
	Partition string   // the Hive key: month or billing_period
	Written   []string // months (YYYY-MM) written because their data changed
	Unchanged []string // months whose data had not changed: left as they were
	Removed   []string // months no longer in the data: their folder removed
	Rows      int64    // rows in the months written
	Bytes     int64    // bytes of the files written
	// Snapshot is the Iceberg snapshot format iceberg committed, 0 when
	// it committed none; Written then names organization/YYYY-MM
	// partitions.
	Snapshot int64
}

// ManifestName is the manifest file at the top of an export folder. Its
// leading underscore keeps Spark, Hive and Trino from reading it as data.
const ManifestName = "_tally_manifest.json"

const (
	exportLockName      = "_tally_export.lock"
	exportStagingPrefix = "_tally_staging-"
	// exportLayout names the shape of Tally's export files; a Tally that
	// changes what a dataset's files hold changes it, and every month is
	// written again.
	exportLayout = "1"
	fileMode     = 0o640 // readable by the group (the lake's readers), never by the world
	dirMode      = 0o750
)

// manifest records, per dataset and month, the fingerprint of what the
// export holds. A month is written again only when its fingerprint
// changes.
type manifest struct {
	Tally    int                                 `json:"tally_export"`
	Datasets map[string]map[string]monthManifest `json:"datasets"`
	FOCUS    *focusManifest                      `json:"focus,omitempty"`
}

// focusManifest says which FOCUS version a FOCUS export holds and, at 1.3,
// why columns are null where FOCUS would have a value.
type focusManifest struct {
	Version  string            `json:"version"`
	Metadata string            `json:"metadata,omitempty"` // FOCUSMetadataName
	Nulls    map[string]string `json:"nulls,omitempty"`
	// Commitments: where each Contract Commitment amount comes from, or
	// why it is null.
	Commitments *commitmentNotes `json:"commitments,omitempty"`
}

// monthManifest is a month's fingerprint and files. Rows, CostSum and
// Latest are there for people (and catch most changes alone); Content
// is the sum of DuckDB's hash of every row written, so any changed value
// in any row changes it; Layout changes with the query that writes the
// files.
type monthManifest struct {
	Rows      int64     `json:"rows"`
	CostSum   string    `json:"cost_sum,omitempty"` // summed across currencies: a fingerprint, not an amount
	Latest    string    `json:"latest"`             // max(fetched_at), or max(snapshot_at) for snapshots
	Content   string    `json:"content_hash"`
	Layout    string    `json:"layout"`
	Files     []string  `json:"files"`
	WrittenAt time.Time `json:"written_at"`
}

func (m monthManifest) sameData(o monthManifest) bool {
	return m.Rows == o.Rows && m.CostSum == o.CostSum && m.Latest == o.Latest && m.Content == o.Content && m.Layout == o.Layout
}

// dataset is one folder of an export: a query whose rows carry the
// partition column, 'YYYY-MM'.
type dataset struct {
	name      string
	partition string
	query     string
	args      []any
	csv       bool
	// guard: the CSV's text columns are written through CSVGuard (csv
	// only).
	guard    bool
	ranged   bool   // From and Until apply
	costExpr string // SQL over the query's columns for CostSum; "" for none
	timeExpr string // SQL for Latest
	// narrow, when set, is query (and its args) for the months from
	// from's to until's only, reading only the usage rows that can fall in
	// them (see monthsOf and narrowed); ok is false for an unbounded range.
	// The layout stays query's.
	narrow func(from, until time.Time) (query string, args []any, ok bool)
	// once: the query's rows (few, from a pass over the whole history) are
	// worked out once, into a temporary table the fingerprint and the COPY
	// both read, rather than once by each.
	once bool
}

// reading is d as the export reads it for the months from from's to
// until's: narrowed where d can be.
func (d dataset) reading(from, until time.Time) dataset {
	if d.narrow != nil {
		if q, args, ok := d.narrow(from, until); ok {
			d.query, d.args = q, args
		}
	}
	return d
}

// monthsOf is the condition that col (a TIMESTAMP, or with zone a
// TIMESTAMPTZ) lies in a month from From's to Until's (exclusive): the
// months a ranged export writes (see inRange). ok is false when the range
// is unbounded.
func monthsOf(col string, zone bool, from, until time.Time) (cond string, args []any, ok bool) {
	typ, layout := "TIMESTAMP", time.DateTime
	if zone {
		typ, layout = "TIMESTAMPTZ", time.DateTime+"+00"
	}
	var parts []string
	if !from.IsZero() {
		f := from.UTC()
		parts = append(parts, col+" >= CAST(? AS "+typ+")")
		args = append(args, time.Date(f.Year(), f.Month(), 1, 0, 0, 0, 0, time.UTC).Format(layout))
	}
	if !until.IsZero() {
		// the month after the one that holds Until's last instant
		u := until.UTC().Add(-time.Microsecond)
		parts = append(parts, col+" < CAST(? AS "+typ+")")
		args = append(args, time.Date(u.Year(), u.Month()+1, 1, 0, 0, 0, 0, time.UTC).Format(layout))
	}
	return strings.Join(parts, " AND "), args, len(parts) > 0
}

// narrowed is the condition that keeps, of FOCUS rows, every one billed in
// the range's months: a usage row is billed in the month of
// date_processed, else of date; a closed month's rows and its late charges
// have no x_DateProcessed. On x_DateProcessed, the usage column as it is,
// the condition reaches the usage table's scan, whose zone maps skip the
// months outside: a ranged export no longer computes every FOCUS row of the
// history to find those of its months. The rows not yet charged pass that
// test in every month; the billing period, which the focus view works out
// on the usage row, leaves those of other months there, ahead of the
// joins (at 24M rows a month's export read every month's uncharged rows).
func narrowed(from, until time.Time) (cond string, args []any, ok bool) {
	c, args, ok := monthsOf("x_DateProcessed", false, from, until)
	if !ok {
		return "", nil, false
	}
	b, bargs, _ := monthsOf("BillingPeriodStart", true, from, until)
	return "(x_DateProcessed IS NULL OR (" + c + ")) AND " + b, append(args, bargs...), true
}

var monthRE = regexp.MustCompile(`^[0-9]{4}-(0[1-9]|1[0-2])$`)

// Write writes the store's data to o.Dir as Parquet (and, for FOCUS on
// request, CSV), one folder per table, Hive-partitioned by month:
// usage/month=2026-10/data_0.parquet. It reads one consistent state of the
// database and works on a read-only store (the analysts' copy).
//
// Every month is written under a temporary name in a staging folder inside
// o.Dir, then renamed into place, so a reader sees a month's old file or
// its new one, never half of one. A manifest beside the folders
// (ManifestName) holds each month's fingerprint; a month whose fingerprint
// has not changed since the last export is left untouched, and a month no
// longer in the data has its folder removed. Files are mode 0640 and
// folders 0750: never readable by the world. Only one Export writes to a
// folder at a time (a lock file in it); a second one fails at once.
func Write(ctx context.Context, st *store.Store, o Options) (Result, error) {
	began := time.Now()
	res := Result{Format: o.Format}
	if o.Dir == "" {
		return res, errors.New("export: the export folder is empty; give --to DIR or set export.dir")
	}
	dir, err := filepath.Abs(o.Dir)
	if err != nil {
		return res, fmt.Errorf("export: %w", err)
	}
	res.Dir = dir
	sets, err := exportDatasets(ctx, st.DB(), o)
	if err != nil {
		return res, fmt.Errorf("export to %s: %w", dir, err)
	}
	if !o.From.IsZero() && !o.Until.IsZero() && !o.Until.After(o.From) {
		return res, fmt.Errorf("export to %s: until %s must be after from %s (until is exclusive)",
			dir, o.Until.Format(tally.DateLayout), o.From.Format(tally.DateLayout))
	}
	if err := os.MkdirAll(dir, dirMode); err != nil {
		return res, fmt.Errorf("export to %s: %w", dir, err)
	}
	unlock, err := lockExportDir(dir)
	if err != nil {
		return res, err
	}
	defer unlock()
	removeStaging(dir)

	man, err := readManifest(dir)
	if err != nil {
		return res, fmt.Errorf("export to %s: %w", dir, err)
	}
	now := time.Now
	if o.Now != nil {
		now = o.Now
	}
	// One connection and one transaction: every dataset reads the same
	// state of the database, even while loads commit on a read-write store.
	conn, err := st.DB().Conn(ctx)
	if err != nil {
		return res, fmt.Errorf("export to %s: %w", dir, err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "BEGIN TRANSACTION"); err != nil {
		return res, fmt.Errorf("export to %s: %w", dir, err)
	}
	defer store.Rollback(conn, nil)

	if o.Format == FormatFOCUS && o.FOCUSVersion != FOCUS12 {
		if err := setFOCUS13Lookups(ctx, conn, o); err != nil {
			return res, fmt.Errorf("export to %s: %w", dir, err)
		}
	}
	for _, d := range sets {
		de, err := exportDataset(ctx, conn, dir, d, o, man, now().UTC(), st.Copying)
		res.Datasets = append(res.Datasets, de)
		// What was renamed into place is recorded even when a later step
		// failed, so the next export does not write it again.
		if werr := writeJSON(dir, ManifestName, "manifest", man); werr != nil && err == nil {
			err = werr
		}
		if err != nil {
			return res, fmt.Errorf("export %s to %s: %w", d.name, dir, err)
		}
	}
	if o.Format == FormatFOCUS {
		if err := finishFOCUS(ctx, conn, dir, o, man, now().UTC(), st.Copying); err != nil {
			return res, fmt.Errorf("export to %s: %w", dir, err)
		}
	}
	res.Duration = time.Since(began)
	return res, nil
}

// usageExport is the usage table as exported: every column but Tally's own
// key_id (store/usagekeys.go), with the run id as text (Spark and BigQuery do not
// read Parquet's UUID type).
const usageExport = `SELECT * EXCLUDE (key_id) REPLACE (CAST(run_id AS VARCHAR) AS run_id),
       strftime(date, '%Y-%m') AS month
FROM usage`

// snapshotExport is a reference snapshot table as exported, partitioned by
// the month its snapshots were taken; JSON and UUID columns as text.
func snapshotExport(table string, jsonCols ...string) string {
	repl := []string{"CAST(run_id AS VARCHAR) AS run_id"}
	for _, c := range jsonCols {
		repl = append(repl, fmt.Sprintf("CAST(%s AS VARCHAR) AS %s", c, c))
	}
	return fmt.Sprintf(`SELECT * REPLACE (%s), strftime(snapshot_at, '%%Y-%%m') AS month FROM %s`, strings.Join(repl, ", "), table)
}

// focusCSVTimes are FOCUS's date/time columns of Cost and Usage, and
// focusCommitmentCSVTimes those of Contract Commitment; the CSV writes
// them as FOCUS's 'YYYY-MM-DDTHH:mm:ssZ'.
var (
	focusCSVTimes           = []string{"BillingPeriodStart", "BillingPeriodEnd", "ChargePeriodStart", "ChargePeriodEnd"}
	focusCommitmentCSVTimes = []string{"ContractCommitmentPeriodStart", "ContractCommitmentPeriodEnd", "ContractPeriodStart", "ContractPeriodEnd",
		"x_FirstChargePeriodStart", "x_LastChargePeriodEnd"}
)

// focusCSVTimed is the FOCUS query q with its time columns cols written
// as FOCUS's 'YYYY-MM-DDTHH:mm:ssZ', in UTC.
func focusCSVTimed(q string, cols []string) string {
	var repl []string
	for _, c := range cols {
		repl = append(repl, fmt.Sprintf(`strftime(%s, '%%Y-%%m-%%dT%%H:%%M:%%SZ') AS %s`, utcOf(c), c))
	}
	return "SELECT * REPLACE (" + strings.Join(repl, ", ") + ") FROM (" + q + ")"
}

func exportDatasets(ctx context.Context, q store.Querier, o Options) ([]dataset, error) {
	switch o.Format {
	case FormatParquet:
		if o.CSV {
			return nil, errors.New("CSV is written for format focus only")
		}
		sets := []dataset{{
			name: "usage", partition: "month", query: usageExport, ranged: true,
			costExpr: "cost", timeExpr: "fetched_at",
		}}
		// A usage row's month is its date's.
		sets[0].narrow = func(from, until time.Time) (string, []any, bool) {
			cond, args, ok := monthsOf("date", false, from, until)
			return `SELECT * FROM (` + usageExport + `) WHERE ` + cond, args, ok
		}
		for _, t := range []struct {
			table string
			json  []string
		}{
			{"payment_method_snapshots", []string{"spec", "raw"}},
			{"rate_card_price_snapshots", nil},
			{"project_snapshots", []string{"raw"}},
			{"location_snapshots", []string{"raw"}},
			{"organization_snapshots", []string{"raw"}},
		} {
			sets = append(sets, dataset{name: t.table, partition: "month", query: snapshotExport(t.table, t.json...), timeExpr: "snapshot_at"})
		}
		return sets, nil
	case FormatFOCUS:
		if !o.Granularity.Valid() {
			return nil, fmt.Errorf("granularity %q is not one of hour, day, week, month, year", o.Granularity)
		}
		if o.Basis != tally.BasisUsage && o.Basis != tally.BasisReported && o.Basis != tally.BasisEstimated {
			return nil, fmt.Errorf("basis %q is not one of usage, reported, estimated", o.Basis)
		}
		body, err := FOCUSQuery(ctx, q)
		if err != nil {
			return nil, err
		}
		base := `SELECT * FROM (` + body + `) WHERE x_Granularity = ? AND x_Basis = ?`
		args := []any{string(o.Granularity), string(o.Basis)}
		// in is the Cost and Usage query over base for some months only.
		in := func(rows func(base string) string) func(from, until time.Time) (string, []any, bool) {
			return func(from, until time.Time) (string, []any, bool) {
				cond, cargs, ok := narrowed(from, until)
				return rows(base + ` AND ` + cond), append(slices.Clone(args), cargs...), ok
			}
		}
		var sets []dataset
		switch o.FOCUSVersion {
		case FOCUS12:
			// 1.2 as it was: the organization is 1.3's billing account.
			rows := func(base string) string {
				return focusPartitioned(`SELECT * EXCLUDE (x_Organization) FROM (` + base + `)`)
			}
			sets = []dataset{{name: "focus", partition: "billing_period", query: rows(base), args: args, ranged: true,
				costExpr: "x_Cost", timeExpr: "x_FetchedAt", narrow: in(rows)}}
		case "", FOCUS13:
			rows := func(base string) string {
				cu, _ := focus13Queries(base)
				return focusPartitioned(cu)
			}
			_, cc := focus13Queries(base)
			sets = []dataset{{name: "focus", partition: "billing_period", query: rows(base), args: args, ranged: true,
				costExpr: "x_Cost", timeExpr: "x_FetchedAt", narrow: in(rows)},
				// Commitments are few and span months: always written whole,
				// partitioned by the month their period starts.
				{name: focusCommitmentsDataset, partition: "start_month", query: cc, args: args, once: true,
					costExpr: "x_AppliedCost", timeExpr: "x_LastChargePeriodEnd"}}
		default:
			return nil, fmt.Errorf("FOCUS version %q is not one of %s, %s", o.FOCUSVersion, FOCUS13, FOCUS12)
		}
		if o.CSV {
			csvq := func(q string) string { return focusCSVTimed(q, focusCSVTimes) }
			rows := sets[0].narrow
			sets = append(sets, dataset{name: "focus_csv", partition: "billing_period", query: csvq(sets[0].query), args: args,
				csv: true, guard: !o.CSVRaw, ranged: true, costExpr: "x_Cost", timeExpr: "x_FetchedAt",
				narrow: func(from, until time.Time) (string, []any, bool) {
					q, args, ok := rows(from, until)
					return csvq(q), args, ok
				}})
			// Every FOCUS dataset as CSV: at 1.3 the Contract Commitment
			// dataset too.
			if o.FOCUSVersion != FOCUS12 {
				cc := sets[1]
				sets = append(sets, dataset{name: focusCommitmentsCSVDataset, partition: cc.partition, query: focusCSVTimed(cc.query, focusCommitmentCSVTimes), args: cc.args,
					csv: true, guard: !o.CSVRaw, once: true, costExpr: cc.costExpr, timeExpr: cc.timeExpr})
			}
		}
		return sets, nil
	}
	return nil, fmt.Errorf("format %q is not one of parquet, focus", o.Format)
}

// focusPartitioned adds the Hive partition column, the billing period
// (YYYY-MM), to FOCUS Cost and Usage rows.
func focusPartitioned(rows string) string {
	return `SELECT *, strftime(` + utcOf("BillingPeriodStart") + `, '%Y-%m') AS billing_period FROM (` + rows + `)`
}

// utcOf is the TIMESTAMPTZ expression e as a UTC TIMESTAMP, as
// timezone('UTC', e) gives it, without ICU's calendar: on every row of a
// FOCUS export, timezone was 4.7 of 7.4 s for the billing periods of 23M
// rows (the focus view works out its periods the same way).
func utcOf(e string) string {
	return "make_timestamp(epoch_us(" + e + "))"
}

// FOCUSQuery returns the SELECT of the focus view, as this Tally defines
// it, with the views it reads inlined (tallysql.Inline), for the database
// q reads. Export runs it rather than the view, so that a database
// published by an older Tally exports with the current mapping. The views
// whose rows a table the load keeps holds (store.KeptDefs) are inlined as the
// database defines them where it has the table: as their files define
// them, the meters of every month (meter_months, meter_skus, for the rate
// card matches) were two passes over every usage row of the history, in
// each of a FOCUS export's queries, ranged or not. That is why this one
// query is still composed by the inliner rather than read from a view or a
// macro: the database's views are those of the Tally that published it
// (or absent), and which views a table stands in for is known only once
// the database is open.
func FOCUSQuery(ctx context.Context, q store.Querier) (string, error) {
	focus, err := tallysql.View("focus")
	if err != nil {
		return "", err
	}
	defs, err := store.KeptDefs(ctx, q)
	if err != nil {
		return "", fmt.Errorf("read the kept tables: %w", err)
	}
	return tallysql.InlineDefined(focus.Query, nil, defs)
}

// fingerprint is what a dataset's month holds, as the manifest records it.
func fingerprints(ctx context.Context, conn *sql.Conn, d dataset, layout string) (map[string]monthManifest, error) {
	cost := "NULL"
	if d.costExpr != "" {
		cost = "CAST(sum(" + d.costExpr + ") AS VARCHAR)"
	}
	q := fmt.Sprintf(`SELECT %s AS part,
       count(*) AS rows,
       %s AS cost_sum,
       CAST(max(%s) AS VARCHAR) AS latest,
       CAST(sum(hash(t)) AS VARCHAR) AS content
FROM (%s) t
GROUP BY part
ORDER BY part`, d.partition, cost, d.timeExpr, d.query)
	rows, err := conn.QueryContext(ctx, q, d.args...)
	if err != nil {
		return nil, fmt.Errorf("fingerprint months: %w", err)
	}
	defer rows.Close()
	out := map[string]monthManifest{}
	for rows.Next() {
		var part sql.NullString
		var m monthManifest
		var costSum, latest sql.NullString
		if err := rows.Scan(&part, &m.Rows, &costSum, &latest, &m.Content); err != nil {
			return nil, fmt.Errorf("fingerprint months: %w", err)
		}
		if !monthRE.MatchString(part.String) {
			return nil, fmt.Errorf("fingerprint months: partition %q is not a month YYYY-MM", part.String)
		}
		m.CostSum, m.Latest, m.Layout = costSum.String, latest.String, layout
		out[part.String] = m
	}
	return out, rows.Err()
}

// layoutOf identifies what a dataset's files hold: the query that writes
// them (with its arguments) and the file format.
func layoutOf(d dataset) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%v\x00%v\x00", exportLayout, d.query, d.args, d.csv)
	if d.csv {
		// Guarded or raw, the same rows are other files.
		fmt.Fprintf(h, "guard %v\x00", d.guard)
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// inRange reports whether month (YYYY-MM) overlaps [from, until).
func inRange(month string, from, until time.Time) bool {
	start, err := time.Parse("2006-01", month)
	if err != nil {
		return false
	}
	end := start.AddDate(0, 1, 0)
	return (from.IsZero() || end.After(from)) && (until.IsZero() || start.Before(until))
}

func exportDataset(ctx context.Context, conn *sql.Conn, dir string, d dataset, o Options, man *manifest, now time.Time, copying func(context.Context) (func(), error)) (DatasetResult, error) {
	de := DatasetResult{Name: d.name, Partition: d.partition}
	read := d
	if d.ranged {
		read = d.reading(o.From, o.Until)
	}
	if d.once {
		table := "temp.tally_export_" + d.name
		if _, err := conn.ExecContext(ctx, "CREATE OR REPLACE TEMP TABLE tally_export_"+d.name+" AS "+d.query, d.args...); err != nil {
			return de, err
		}
		defer conn.ExecContext(context.Background(), "DROP TABLE IF EXISTS "+table)
		read.query, read.args = "SELECT * FROM "+table, nil
	}
	have, err := fingerprints(ctx, conn, read, layoutOf(d))
	if err != nil {
		return de, err
	}
	old := man.Datasets[d.name]
	if old == nil {
		old = map[string]monthManifest{}
		man.Datasets[d.name] = old
	}
	root := filepath.Join(dir, d.name)
	var write []string
	for _, m := range sortedKeys(have) {
		if d.ranged && !inRange(m, o.From, o.Until) {
			continue
		}
		prev, ok := old[m]
		if ok && prev.sameData(have[m]) && filesExist(filepath.Join(root, d.partition+"="+m), prev.Files) {
			de.Unchanged = append(de.Unchanged, m)
			continue
		}
		write = append(write, m)
	}
	var gone []string
	for _, m := range sortedKeys(old) {
		if _, ok := have[m]; !ok && (!d.ranged || inRange(m, o.From, o.Until)) {
			gone = append(gone, m)
		}
	}
	if len(write) > 0 {
		if err := os.MkdirAll(root, dirMode); err != nil {
			return de, err
		}
		if err := os.Chmod(root, dirMode); err != nil {
			return de, err
		}
		done, err := copying(ctx)
		if err != nil {
			return de, err
		}
		src := d
		if d.once {
			src = read
		}
		top, err := copyMonths(ctx, conn, dir, src, write)
		done()
		if top != "" {
			defer os.RemoveAll(top)
		}
		if err != nil {
			return de, err
		}
		// From here on files are renamed into place; each rename is atomic
		// and quick, so the loop finishes even when ctx is cancelled.
		for _, m := range write {
			files, bytes, err := placeMonth(stagedMonth(top, d, m), filepath.Join(root, d.partition+"="+m), old[m].Files)
			if err != nil {
				return de, fmt.Errorf("month %s: %w", m, err)
			}
			fp := have[m]
			fp.Files, fp.WrittenAt = files, now
			old[m] = fp
			de.Written = append(de.Written, m)
			de.Rows += fp.Rows
			de.Bytes += bytes
		}
		store.SyncDir(root)
	}
	for _, m := range gone {
		part := filepath.Join(root, d.partition+"="+m)
		for _, f := range old[m].Files {
			if err := os.Remove(filepath.Join(part, f)); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return de, fmt.Errorf("remove month %s: %w", m, err)
			}
		}
		// A folder someone put other files in stays.
		if err := os.Remove(part); err != nil && !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTEMPTY) && !errors.Is(err, syscall.EEXIST) {
			return de, fmt.Errorf("remove month %s: %w", m, err)
		}
		delete(old, m)
		de.Removed = append(de.Removed, m)
	}
	return de, nil
}

// copyMonths writes the months of d into a new staging folder inside dir
// with COPY … PARTITION_BY, and returns the folder, which the caller
// removes; a month's files are at stagedMonth.
func copyMonths(ctx context.Context, conn *sql.Conn, dir string, d dataset, months []string) (top string, err error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	top = filepath.Join(dir, exportStagingPrefix+hex.EncodeToString(b[:]))
	// The staging folder is private until its files are renamed out.
	if err := os.Mkdir(top, 0o700); err != nil {
		return "", err
	}
	format := "FORMAT parquet"
	if d.csv {
		format = "FORMAT csv, HEADER true"
	}
	// A partitioned COPY holds each partition's rows until it has this
	// many (DuckDB's default 524,288): a year of hourly FOCUS rows, a
	// month each under that, were all held at once, at the edge of the
	// writer's memory_limit, and the wider rows of split cost allocation
	// ran out of it. Flushing sooner bounds what is held.
	if _, err := conn.ExecContext(ctx, "SET partitioned_write_flush_threshold = 16384"); err != nil {
		return top, err
	}
	// One COPY a month where d can narrow its query to the month's rows: a
	// COPY keeps a file writer open per month and thread (tens of MB each
	// for FOCUS 1.3's columns), so writing every month of the history at
	// once needed memory in proportion to the history. A dataset that
	// cannot narrow (the reference snapshots, the commitments) would read
	// everything once per month: it is written in one COPY.
	batches := [][]string{months}
	if d.narrow != nil {
		batches = batches[:0]
		for _, m := range months {
			batches = append(batches, []string{m})
		}
	}
	for _, batch := range batches {
		dm := d
		if len(batch) == 1 {
			start, err := time.Parse("2006-01", batch[0])
			if err != nil {
				return top, fmt.Errorf("month %q: %w", batch[0], err)
			}
			dm = d.reading(start, start.AddDate(0, 1, 0))
		}
		out := filepath.Join(top, batchFolder(d, batch[0]), d.name)
		if err := os.Mkdir(filepath.Dir(out), 0o700); err != nil {
			return top, err
		}
		rows := dm.query
		if d.csv && d.guard {
			if rows, err = csvGuarded(conn, rows, d.partition); err != nil {
				return top, err
			}
		}
		// COPY takes no parameter for its target: the path is quoted as a
		// SQL string, the months travel as parameters.
		q := fmt.Sprintf(`COPY (SELECT * FROM (%s) WHERE %s IN (%s)) TO %s (%s, PARTITION_BY (%s))`,
			rows, d.partition, strings.TrimSuffix(strings.Repeat("?, ", len(batch)), ", "),
			store.QuoteString(out), format, d.partition)
		args := slices.Clone(dm.args)
		for _, m := range batch {
			args = append(args, m)
		}
		if _, err := conn.ExecContext(ctx, q, args...); err != nil {
			return top, fmt.Errorf("write months %s: %w", strings.Join(batch, ", "), err)
		}
		if err := ctx.Err(); err != nil {
			return top, err
		}
	}
	return top, nil
}

// stagedMonth is where copyMonths put month m's files.
func stagedMonth(top string, d dataset, m string) string {
	return filepath.Join(top, batchFolder(d, m), d.name, d.partition+"="+m)
}

// batchFolder is the staging folder of the COPY that writes month m: its
// own when d narrows, else the one COPY's of all months.
func batchFolder(d dataset, m string) string {
	if d.narrow == nil {
		return "all"
	}
	return m
}

// placeMonth moves a month's staged files into its partition folder, each
// made 0640 and synced before its atomic rename, then removes the files of
// the previous export that the new one did not replace. It returns the
// files' names and their size.
func placeMonth(staged, part string, previous []string) ([]string, int64, error) {
	entries, err := os.ReadDir(staged)
	if err != nil {
		return nil, 0, err
	}
	if err := os.MkdirAll(part, dirMode); err != nil {
		return nil, 0, err
	}
	if err := os.Chmod(part, dirMode); err != nil {
		return nil, 0, err
	}
	var names []string
	var size int64
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		src := filepath.Join(staged, e.Name())
		n, err := syncFile(src)
		if err != nil {
			return nil, 0, err
		}
		if err := os.Rename(src, filepath.Join(part, e.Name())); err != nil {
			return nil, 0, err
		}
		names = append(names, e.Name())
		size += n
	}
	if len(names) == 0 {
		return nil, 0, fmt.Errorf("no file was written to %s", staged)
	}
	for _, f := range previous {
		if !slices.Contains(names, f) {
			if err := os.Remove(filepath.Join(part, f)); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return nil, 0, err
			}
		}
	}
	store.SyncDir(part)
	sort.Strings(names)
	return names, size, nil
}

func syncFile(path string) (int64, error) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	if err := f.Chmod(fileMode); err != nil {
		return 0, err
	}
	if err := f.Sync(); err != nil {
		return 0, err
	}
	fi, err := f.Stat()
	if err != nil {
		return 0, err
	}
	return fi.Size(), f.Close()
}

func filesExist(part string, files []string) bool {
	if len(files) == 0 {
		return false
	}
	for _, f := range files {
		if fi, err := os.Stat(filepath.Join(part, f)); err != nil || !fi.Mode().IsRegular() {
			return false
		}
	}
	return true
}

func readManifest(dir string) (*manifest, error) {
	m := &manifest{Tally: 1, Datasets: map[string]map[string]monthManifest{}}
	b, err := os.ReadFile(filepath.Join(dir, ManifestName))
	if errors.Is(err, fs.ErrNotExist) {
		return m, nil
	}
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(b, m); err != nil {
		// A manifest that cannot be read only costs a full export.
		return &manifest{Tally: 1, Datasets: map[string]map[string]monthManifest{}}, nil
	}
	if m.Datasets == nil {
		m.Datasets = map[string]map[string]monthManifest{}
	}
	return m, nil
}

// writeJSON replaces the file name in dir atomically with v as indented
// JSON: the manifest and the FOCUS metadata. what names the file in the
// error.
func writeJSON(dir, name, what string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	err = atomicfile.Write(context.Background(), filepath.Join(dir, name), fileMode, func(w io.Writer) error {
		_, err := w.Write(append(b, '\n'))
		return err
	})
	if err != nil {
		return fmt.Errorf("write %s: %w", what, err)
	}
	return nil
}

// lockExportDir takes the export folder's lock, or fails at once saying
// who holds it. The kernel frees it when the process exits.
func lockExportDir(dir string) (func(), error) {
	path := filepath.Join(dir, exportLockName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("export to %s: lock: %w", dir, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		holder := "another process"
		if b, rerr := os.ReadFile(path); rerr == nil {
			if pid, perr := strconv.Atoi(strings.TrimSpace(string(b))); perr == nil && pid > 0 {
				holder = fmt.Sprintf("pid %d", pid)
			}
		}
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("export to %s: another tally export (%s) is writing this folder; wait for it to finish and try again", dir, holder)
		}
		return nil, fmt.Errorf("export to %s: lock: %w", dir, err)
	}
	if err := f.Truncate(0); err == nil {
		f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return func() {
		syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}

// removeStaging removes staging folders a killed export left behind; the
// caller holds the folder's lock, so none is in use.
func removeStaging(dir string) {
	if stale, err := filepath.Glob(filepath.Join(store.GlobEscape(dir), exportStagingPrefix+"*")); err == nil {
		for _, s := range stale {
			os.RemoveAll(s)
		}
	}
}

func sortedKeys(m map[string]monthManifest) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
