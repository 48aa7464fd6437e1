package export_test

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"math/big"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/iceberg-go/table"
	"github.com/rs/zerolog"

	"github.com/tally-dev/tally"
	"github.com/tally-dev/tally/configs"
	"github.com/tally-dev/tally/export"
	"github.com/tally-dev/tally/internal/testkit/laketest"
	"github.com/tally-dev/tally/internal/testkit/pgtest"
	"github.com/tally-dev/tally/internal/testkit/s3test"
	"github.com/tally-dev/tally/lake"
	"github.com/tally-dev/tally/lake/ice"
	"github.com/tally-dev/tally/store"
)

// Config, Partition and the summary's keys as the tests name them.
type (
	Config    = lake.Config
	Partition = lake.Partition
)

const (
	SummaryRunID   = lake.SummaryRunID
	SummaryVersion = lake.SummaryVersion
	SummarySource  = lake.SummarySource
	UsageTable     = lake.UsageTable
)

// usageSelect reads lake.UsageColumns from DuckDB's usage table, the
// cost as text.
func usageSelect() string {
	parts := make([]string, len(lake.UsageColumns))
	for i, c := range lake.UsageColumns {
		parts[i] = c.Name
		switch {
		case c.Type == lake.CostType:
			// As text: exact, whatever the driver makes of a DECIMAL.
			parts[i] = "CAST(cost AS VARCHAR) AS cost"
		case c.SQL != "":
			parts[i] = c.SQL + " AS " + c.Name
		}
	}
	return strings.Join(parts, ", ")
}

func TestUsageColumnsAreTheTables(t *testing.T) {
	s := openStore(t)
	rows, err := s.DB().Query(`SELECT column_name FROM information_schema.columns
WHERE table_name = 'usage' AND column_name <> 'key_id' ORDER BY column_name`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var want []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			t.Fatal(err)
		}
		want = append(want, name)
	}
	var got []string
	for i, c := range lake.UsageColumns {
		got = append(got, c.Name)
		if c.ID != i+1 {
			t.Errorf("column %s has field id %d, want %d (its position)", c.Name, c.ID, i+1)
		}
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("the lake's usage columns\n%s\ndiffer from DuckDB's usage table (but key_id)\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func openStore(t testing.TB) *store.Store {
	t.Helper()
	s, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "tally.duckdb"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func lakeConfig(t testing.TB) Config {
	dir := t.TempDir()
	return Config{SQLite: filepath.Join(dir, "catalog.db"), Warehouse: filepath.Join(dir, "warehouse")}
}

func seq(rows []tally.MeterData) iter.Seq2[tally.MeterData, error] {
	return func(yield func(tally.MeterData, error) bool) {
		for _, r := range rows {
			if !yield(r, nil) {
				return
			}
		}
	}
}

// loadMonth loads org's days of the month starting at month: two meters a
// day, one in EUR, with costs that carry all 12 decimals and grow with
// bump, so a reload with another bump changes every figure.
func loadMonth(t testing.TB, s *store.Store, org string, month time.Time, bump int) {
	t.Helper()
	next := month.AddDate(0, 1, 0)
	var rows []tally.MeterData
	for d := month; d.Before(next); d = d.AddDate(0, 0, 1) {
		price := 0.5
		rows = append(rows,
			tally.MeterData{Date: d, MeterName: "streaming", Unit: "minutes", Quantity: float64(d.Day()), Price: &price,
				Cost: tally.MustDecimal(fmt.Sprintf("%d.%012d", d.Day()+bump, 123456789012+bump)), Currency: "USD", Project: "web"},
			tally.MeterData{Date: d, MeterName: "storage", Unit: "gigabytes", Quantity: 2, Family: "store",
				Cost: tally.MustDecimal(fmt.Sprintf("0.%012d", 7+bump)), Currency: "EUR", Project: "archive", PaymentMethod: "pm-1"},
		)
	}
	q := tally.UsageQuery{Window: tally.Window{Start: month, End: next, Granularity: tally.Day}, Organization: org}
	if _, err := s.LoadWindow(context.Background(), q, store.NewRunID(), seq(rows)); err != nil {
		t.Fatal(err)
	}
}

var (
	aug = time.Date(2026, 8, 1, 0, 0, 0, 0, time.UTC)
	sep = time.Date(2026, 9, 1, 0, 0, 0, 0, time.UTC)
	oct = time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC)
)

func commit(t *testing.T, s *store.Store, c Config, run string) export.LakeResult {
	t.Helper()
	res, err := export.CommitLake(context.Background(), s, export.LakeOptions{Config: c, Source: s.Path(), RunID: run, Version: "v-test", Helper: laketest.Helper(t)}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func loadUsage(t *testing.T, c Config) *table.Table {
	t.Helper()
	l, err := ice.Open(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	tb, err := l.LoadTable(context.Background(), UsageTable)
	if err != nil {
		t.Fatal(err)
	}
	return tb
}

// duckRows are the usage rows as the lake should hold them, one line each
// (lake.UsageColumns in order), sorted.
func duckRows(t *testing.T, dbs ...*store.Store) []string {
	t.Helper()
	var out []string
	for _, s := range dbs {
		rows, err := s.DB().QueryContext(context.Background(), "SELECT "+usageSelect()+" FROM usage")
		if err != nil {
			t.Fatal(err)
		}
		vals := make([]any, len(lake.UsageColumns))
		ptrs := make([]any, len(lake.UsageColumns))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		for rows.Next() {
			if err := rows.Scan(ptrs...); err != nil {
				t.Fatal(err)
			}
			cells := make([]string, len(lake.UsageColumns))
			for i, c := range lake.UsageColumns {
				switch v := vals[i].(type) {
				case nil:
					cells[i] = "NULL"
				case time.Time:
					cells[i] = strconv.FormatInt(v.UTC().UnixMicro(), 10)
				case float64:
					cells[i] = strconv.FormatFloat(v, 'g', -1, 64)
				case string:
					cells[i] = v
					if c.Type == lake.CostType {
						d, err := tally.ParseDecimal(v)
						if err != nil {
							t.Fatal(err)
						}
						n, err := d.Scaled(12)
						if err != nil {
							t.Fatal(err)
						}
						cells[i] = n.String()
					}
				default:
					t.Fatalf("column %s: unexpected %T", c.Name, v)
				}
			}
			out = append(out, strings.Join(cells, "|"))
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		rows.Close()
	}
	slices.Sort(out)
	return out
}

// lakeRows are the usage table's rows in its current snapshot, read
// through iceberg-go's scan, as duckRows writes them.
func lakeRows(t *testing.T, tb *table.Table) []string {
	t.Helper()
	if tb.CurrentSnapshot() == nil {
		return nil
	}
	at, err := tb.Scan().ToArrowTable(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer at.Release()
	tr := array.NewTableReader(at, 4096)
	defer tr.Release()
	var out []string
	for tr.Next() {
		rec := tr.RecordBatch()
		for r := 0; r < int(rec.NumRows()); r++ {
			cells := make([]string, len(lake.UsageColumns))
			for i, c := range lake.UsageColumns {
				idx := rec.Schema().FieldIndices(c.Name)
				if len(idx) != 1 {
					t.Fatalf("the lake's rows have no column %s", c.Name)
				}
				col := rec.Column(idx[0])
				if col.IsNull(r) {
					cells[i] = "NULL"
					continue
				}
				switch a := col.(type) {
				case *array.String:
					cells[i] = a.Value(r)
				case *array.Timestamp:
					cells[i] = strconv.FormatInt(int64(a.Value(r)), 10)
				case *array.Float64:
					cells[i] = strconv.FormatFloat(a.Value(r), 'g', -1, 64)
				case *array.Decimal128:
					cells[i] = a.Value(r).BigInt().String()
				default:
					t.Fatalf("column %s: unexpected %T", c.Name, col)
				}
			}
			out = append(out, strings.Join(cells, "|"))
		}
	}
	slices.Sort(out)
	return out
}

// sameRows checks the lake holds exactly the stores' usage rows: per
// organization, month and currency the same count and exact cost sum, no
// row twice, and row for row the same values.
func sameRows(t *testing.T, tb *table.Table, dbs ...*store.Store) {
	t.Helper()
	want, got := duckRows(t, dbs...), lakeRows(t, tb)
	if len(want) == 0 {
		t.Fatal("the stores hold no usage: nothing to compare")
	}
	totals := func(rows []string) map[string]string {
		type tot struct {
			n   int
			sum *big.Int
		}
		m := map[string]*tot{}
		org, date, cost, cur := colIndex(t, "organization"), colIndex(t, "date"), colIndex(t, "cost"), colIndex(t, "currency")
		for _, r := range rows {
			f := strings.Split(r, "|")
			us, _ := strconv.ParseInt(f[date], 10, 64)
			k := f[org] + " " + time.UnixMicro(us).UTC().Format("2006-01") + " " + f[cur]
			if m[k] == nil {
				m[k] = &tot{sum: new(big.Int)}
			}
			v, _ := new(big.Int).SetString(f[cost], 10)
			m[k].n++
			m[k].sum.Add(m[k].sum, v)
		}
		out := map[string]string{}
		for k, v := range m {
			out[k] = fmt.Sprintf("%d rows, cost %s e-12", v.n, v.sum)
		}
		return out
	}
	wt, gt := totals(want), totals(got)
	for k, v := range wt {
		if gt[k] != v {
			t.Errorf("%s: lake %q, DuckDB %q", k, gt[k], v)
		}
	}
	for k, v := range gt {
		if _, ok := wt[k]; !ok {
			t.Errorf("%s: lake %q, not in DuckDB", k, v)
		}
	}
	for i := 1; i < len(got); i++ {
		if got[i] == got[i-1] {
			t.Fatalf("the lake holds a row twice: %s", got[i])
		}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("the lake's %d rows differ from DuckDB's %d", len(got), len(want))
	}
}

func colIndex(t *testing.T, name string) int {
	i := slices.IndexFunc(lake.UsageColumns, func(c lake.Column) bool { return c.Name == name })
	if i < 0 {
		t.Fatalf("no column %s", name)
	}
	return i
}

// dataFiles are the data files of the table's current snapshot, by
// partition ("org 2026-09").
func dataFiles(t *testing.T, tb *table.Table) map[string][]string {
	t.Helper()
	tasks, err := tb.Scan().PlanFiles(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for _, task := range tasks {
		p := task.File.Partition()
		var org string
		var month int32
		for id, v := range p {
			switch id {
			case 1000:
				org = v.(string)
			case 1001:
				month = v.(int32)
			}
		}
		k := fmt.Sprintf("%s %s", org, time.Date(1970, time.Month(1+month), 1, 0, 0, 0, 0, time.UTC).Format("2006-01"))
		out[k] = append(out[k], task.File.FilePath())
	}
	for _, fs := range out {
		slices.Sort(fs)
	}
	return out
}

func TestExportCommitsOnlyWhatChanged(t *testing.T) {
	s := openStore(t)
	for _, org := range []string{"acme", "globex"} {
		loadMonth(t, s, org, aug, 0)
		loadMonth(t, s, org, sep, 0)
	}
	c := lakeConfig(t)

	first := commit(t, s, c, "run-1")
	if !first.Full || len(first.Partitions) != 4 {
		t.Fatalf("first export: full %v, partitions %v; want full, 4", first.Full, first.Partitions)
	}
	tb := loadUsage(t, c)
	snap := tb.CurrentSnapshot()
	if snap == nil || snap.SnapshotID != first.Commit.SnapshotID {
		t.Fatalf("current snapshot %v, want the export's %d", snap, first.Commit.SnapshotID)
	}
	for k, want := range map[string]string{SummaryRunID: "run-1", SummaryVersion: "v-test", SummarySource: s.Path()} {
		if got := snap.Summary.Properties[k]; got != want {
			t.Errorf("snapshot summary %s = %q, want %q", k, got, want)
		}
	}
	if got := tb.Metadata().Version(); got != 2 {
		t.Errorf("format version %d, want 2", got)
	}
	if got := tb.Spec().String(); !strings.Contains(got, "identity") || !strings.Contains(got, "month") {
		t.Errorf("partition spec %s, want identity(organization) and month(date)", got)
	}
	cost, _ := tb.Schema().FindFieldByName("cost")
	if cost.Type.String() != "decimal(38, 12)" {
		t.Errorf("cost is %s, want decimal(38, 12)", cost.Type)
	}
	sameRows(t, tb, s)
	before := dataFiles(t, tb)
	if len(before) != 4 {
		t.Fatalf("data files by partition %v, want 4 partitions", before)
	}

	// Every data file carries the Iceberg field ids: a reader that maps
	// columns by id (after a rename, or without a name mapping) finds
	// them.
	for _, fs := range before {
		for _, f := range fs {
			checkFieldIDs(t, tb, f)
		}
	}

	// Nothing changed: nothing committed.
	again := commit(t, s, c, "run-2")
	if len(again.Partitions) != 0 || again.Commit.SnapshotID != 0 {
		t.Fatalf("second export committed %v (snapshot %d); want nothing", again.Partitions, again.Commit.SnapshotID)
	}
	if tb2 := loadUsage(t, c); tb2.CurrentSnapshot().SnapshotID != snap.SnapshotID || len(tb2.Metadata().Snapshots()) != 1 {
		t.Fatalf("an export with nothing changed made a snapshot: %d snapshots", len(tb2.Metadata().Snapshots()))
	}

	// acme's September fetched again with new figures: exactly its
	// partition is replaced, the others keep their files.
	loadMonth(t, s, "acme", sep, 5)
	third := commit(t, s, c, "run-3")
	if third.Full || len(third.Partitions) != 1 || third.Partitions[0] != (Partition{Organization: "acme", Month: sep}) {
		t.Fatalf("third export: full %v, partitions %v; want acme's September only", third.Full, third.Partitions)
	}
	tb = loadUsage(t, c)
	if got := len(tb.Metadata().Snapshots()); got != 2 {
		t.Fatalf("%d snapshots, want 2", got)
	}
	if s3 := tb.CurrentSnapshot(); s3.Summary.Operation != table.OpOverwrite || s3.Summary.Properties[SummaryRunID] != "run-3" {
		t.Fatalf("third snapshot: %s %v; want an overwrite naming run-3", s3.Summary.Operation, s3.Summary.Properties)
	}
	after := dataFiles(t, tb)
	for k, fs := range before {
		same := slices.Equal(after[k], fs)
		if k == "acme 2026-09" && same {
			t.Errorf("%s kept its files %v; want them replaced", k, fs)
		}
		if k != "acme 2026-09" && !same {
			t.Errorf("%s: files %v became %v; want them untouched", k, fs, after[k])
		}
	}
	sameRows(t, tb, s)

	// A new month is a new partition; the table's old ones stay.
	loadMonth(t, s, "globex", oct, 1)
	fourth := commit(t, s, c, "run-4")
	if len(fourth.Partitions) != 1 || fourth.Partitions[0] != (Partition{Organization: "globex", Month: oct}) {
		t.Fatalf("fourth export: partitions %v; want globex's October", fourth.Partitions)
	}
	sameRows(t, loadUsage(t, c), s)

	// acme's September fetched again with no rows: its partition is
	// emptied, its files dropped and none written; acme's October, in
	// the same window and empty before and after, gets no file either.
	q := tally.UsageQuery{Window: tally.Window{Start: sep, End: oct.AddDate(0, 1, 0), Granularity: tally.Day}, Organization: "acme"}
	if _, err := s.LoadWindow(context.Background(), q, store.NewRunID(), seq(nil)); err != nil {
		t.Fatal(err)
	}
	fifth := commit(t, s, c, "run-5")
	if len(fifth.Partitions) != 2 || fifth.Rows != 0 || fifth.Commit.Dropped != 1 {
		t.Fatalf("fifth export: %+v; want acme's September and October, no rows, September's file dropped", fifth)
	}
	files := dataFiles(t, loadUsage(t, c))
	if _, ok := files["acme 2026-09"]; ok {
		t.Fatalf("acme's emptied September keeps files %v", files["acme 2026-09"])
	}
	if _, ok := files["acme 2026-10"]; ok {
		t.Fatalf("acme's empty October got files %v", files["acme 2026-10"])
	}
	sameRows(t, loadUsage(t, c), s)
}

// checkFieldIDs checks that every top-level column of the Parquet file at
// path carries the table's field id for its name.
func checkFieldIDs(t *testing.T, tb *table.Table, path string) {
	t.Helper()
	r, err := file.OpenParquetFile(strings.TrimPrefix(path, "file://"), false)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	root := r.MetaData().Schema.Root()
	if root.NumFields() != len(lake.UsageColumns) {
		t.Fatalf("%s has %d columns, want %d", path, root.NumFields(), len(lake.UsageColumns))
	}
	for i := 0; i < root.NumFields(); i++ {
		f := root.Field(i)
		want, ok := tb.Schema().FindFieldByName(f.Name())
		if !ok {
			t.Fatalf("%s: column %s is not in the table", path, f.Name())
		}
		if int(f.FieldID()) != want.ID {
			t.Fatalf("%s: column %s has field id %d, want %d", path, f.Name(), f.FieldID(), want.ID)
		}
	}
}

// TestExportFromAnOlderCopy: a database from before the loads recorded
// their changes (no usage_changes) is written whole into a new table;
// once the table holds a commit from it, only the changes can say what
// to write next, and their absence is an error that says so.
func TestExportFromAnOlderCopy(t *testing.T) {
	s := openStore(t)
	loadMonth(t, s, "acme", aug, 0)
	if _, err := s.DB().Exec(`DROP TABLE usage_changes`); err != nil {
		t.Fatal(err)
	}
	c := lakeConfig(t)
	if res := commit(t, s, c, "old-1"); !res.Full || len(res.Partitions) != 1 {
		t.Fatalf("export of an older copy: %+v; want its one partition written whole", res)
	}
	sameRows(t, loadUsage(t, c), s)
	_, err := export.CommitLake(context.Background(), s, export.LakeOptions{Config: c, Source: s.Path(), RunID: "old-2", Version: "v-test", Helper: laketest.Helper(t)}, zerolog.Nop())
	if !errors.Is(err, store.ErrNoUsageChanges) {
		t.Fatalf("second export of an older copy: %v; want store.ErrNoUsageChanges", err)
	}
}

// TestLakeCommitKilledAtAnyMoment kills tally-lake (kill -9) at random
// moments of an export to the lake, while it reads the table's state or
// commits: after each kill the table is at a committed snapshot, the one
// before the export or the one it was making, never a mix; the next
// export commits what is missing, and the lake then holds the database's
// rows exactly.
func TestLakeCommitKilledAtAnyMoment(t *testing.T) {
	s := openStore(t)
	for _, org := range []string{"acme", "globex"} {
		loadMonth(t, s, org, aug, 0)
		loadMonth(t, s, org, sep, 0)
	}
	c := lakeConfig(t)
	real := laketest.Helper(t)
	pids := filepath.Join(t.TempDir(), "pids")
	wrapper := filepath.Join(t.TempDir(), "tally-lake")
	script := fmt.Sprintf("#!/bin/sh\necho $$ >> '%s'\nexec '%s' \"$@\"\n", pids, real)
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	opts := export.LakeOptions{Config: c, Source: s.Path(), Version: "v-test", Helper: wrapper}
	began := time.Now()
	opts.RunID = "whole"
	if _, err := export.CommitLake(context.Background(), s, opts, zerolog.Nop()); err != nil {
		t.Fatal(err)
	}
	full := time.Since(began)

	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 41))
	kills, trials := 0, 0
	for i := 1; kills < 30 && i <= 60; i++ {
		trials++
		org := []string{"acme", "globex"}[rng.IntN(2)]
		month := []time.Time{aug, sep}[rng.IntN(2)]
		before := lakeRows(t, loadUsage(t, c))
		loadMonth(t, s, org, month, i)
		os.Remove(pids)
		opts.RunID = fmt.Sprintf("trial-%d", i)
		done := make(chan error, 1)
		go func() {
			_, err := export.CommitLake(context.Background(), s, opts, zerolog.Nop())
			done <- err
		}()
		time.Sleep(time.Duration(rng.Int64N(int64(full))))
		if b, err := os.ReadFile(pids); err == nil {
			lines := strings.Fields(string(b))
			if pid, err := strconv.Atoi(lines[len(lines)-1]); err == nil {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		err := <-done
		if err != nil {
			if !strings.Contains(err.Error(), "signal: killed") {
				t.Fatalf("trial %d: the export failed for another reason than the kill: %v", i, err)
			}
			kills++
		}
		got := lakeRows(t, loadUsage(t, c))
		if want := duckRows(t, s); !slices.Equal(got, before) && !slices.Equal(got, want) {
			t.Fatalf("trial %d (killed: %v): the lake's %d rows are neither the snapshot before the export (%d rows) nor the one it made (%d rows)", i, err != nil, len(got), len(before), len(want))
		}
		opts.RunID = fmt.Sprintf("trial-%d-again", i)
		if _, err := export.CommitLake(context.Background(), s, opts, zerolog.Nop()); err != nil {
			t.Fatalf("trial %d: the export after the kill: %v", i, err)
		}
		sameRows(t, loadUsage(t, c), s)
	}
	if kills < 30 {
		t.Fatalf("only %d of %d trials killed tally-lake while it ran (a whole export takes %s)", kills, trials, full)
	}
	t.Logf("%d of %d trials killed tally-lake (a whole export takes %s)", kills, trials, full.Round(time.Millisecond))
}

// TestLakeMaintainLeavesOnlyTheTable: after exports that replaced
// partitions and one a kill cut short (a file written, never committed),
// maintenance with no age to wait for expires the superseded snapshots and
// deletes the files no snapshot holds: the table reads as before, and
// the Parquet files under its folder are exactly its current rows, so even
// a plain glob of the warehouse reads the table.
func TestLakeMaintainLeavesOnlyTheTable(t *testing.T) {
	ctx := context.Background()
	s := openStore(t)
	loadMonth(t, s, "acme", aug, 0)
	loadMonth(t, s, "globex", aug, 0)
	c := lakeConfig(t)
	commit(t, s, c, "run-1")
	loadMonth(t, s, "acme", aug, 3)
	commit(t, s, c, "run-2")
	tb := loadUsage(t, c)
	dataDir := filepath.Join(strings.TrimPrefix(tb.Location(), "file://"), "data")
	stray := filepath.Join(dataDir, "acme", "2026-08", "killed.parquet")
	if _, err := s.DB().ExecContext(ctx, `COPY (SELECT * FROM usage LIMIT 3) TO `+store.QuoteString(stray)+` (FORMAT parquet)`); err != nil {
		t.Fatal(err)
	}
	glob := store.QuoteString(filepath.Join(dataDir, "*", "*", "*.parquet"))
	count := func() int64 {
		t.Helper()
		var n int64
		if err := s.DB().QueryRowContext(ctx, `SELECT count(*) FROM read_parquet(`+glob+`, union_by_name = true)`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	rows := int64(len(duckRows(t, s)))
	if n := count(); n == rows {
		t.Fatalf("before maintenance the glob reads %d rows, the table's count: the superseded and stray files should be there", n)
	}
	var m lake.Maintained
	req := lake.Request{Op: "maintain", Catalog: c, Table: lake.UsageTable, KeepSnapshots: 0, OrphanAge: 0}
	if err := lake.Call(ctx, laketest.Helper(t), req, &m, zerolog.Nop()); err != nil {
		t.Fatal(err)
	}
	if m.Expired != 1 || m.Snapshots != 1 || m.Orphans < 1 {
		t.Fatalf("maintain: %+v; want run-1's snapshot expired, run-2's kept, the stray file deleted", m)
	}
	sameRows(t, loadUsage(t, c), s)
	if n := count(); n != rows {
		t.Fatalf("after maintenance the glob reads %d rows; want the table's %d", n, rows)
	}
	if _, err := os.Stat(stray); !os.IsNotExist(err) {
		t.Fatalf("the stray file is still there: %v", err)
	}
}

// TestShardsShareAPostgresCatalog has four shards, each its own DuckDB
// store holding its own organizations (as four machines), export at once
// into one PostgreSQL catalog and one warehouse, each through its own
// tally-lake process: every shard's partitions land, none twice, and the
// table is exactly the union of the stores. Then each shard fetches one
// month again with new figures and they export at once again: exactly
// those partitions change. The warehouse is a shared folder, or a bucket
// on a real S3 server, each shard staging its files in a folder of its
// own, which every export leaves empty.
func TestShardsShareAPostgresCatalog(t *testing.T) {
	t.Run("folder", func(t *testing.T) {
		testShardsShareAPostgresCatalog(t, Config{Postgres: pgtest.Database(t), Password: pgtest.Password, Warehouse: filepath.Join(t.TempDir(), "warehouse")})
	})
	t.Run("s3", func(t *testing.T) {
		c := Config{Postgres: pgtest.Database(t), Password: pgtest.Password}
		c.Warehouse, c.S3 = s3test.Warehouse(t)
		testShardsShareAPostgresCatalog(t, c)
	})
}

func testShardsShareAPostgresCatalog(t *testing.T, c Config) {
	const shards = 4
	stores := make([]*store.Store, shards)
	staging := make([]string, shards)
	for i := range stores {
		staging[i] = filepath.Join(t.TempDir(), "staging")
		stores[i] = openStore(t)
		for _, org := range []string{fmt.Sprintf("org-%d-a", i), fmt.Sprintf("org-%d-b", i)} {
			loadMonth(t, stores[i], org, aug, 0)
			loadMonth(t, stores[i], org, sep, 0)
		}
	}
	exportAll := func(round string) []export.LakeResult {
		t.Helper()
		res := make([]export.LakeResult, shards)
		errs := make([]error, shards)
		var wg sync.WaitGroup
		for i, s := range stores {
			wg.Add(1)
			go func() {
				defer wg.Done()
				res[i], errs[i] = export.CommitLake(context.Background(), s, export.LakeOptions{Config: c, Source: s.Path(),
					RunID: fmt.Sprintf("%s-shard-%d", round, i), Version: "v-test", Helper: laketest.Helper(t), Staging: staging[i]}, zerolog.Nop())
			}()
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Fatalf("%s, shard %d: %v", round, i, err)
			}
			if left, _ := os.ReadDir(staging[i]); len(left) != 0 {
				t.Fatalf("%s, shard %d: its export left %d file(s) in its staging folder", round, i, len(left))
			}
		}
		return res
	}
	redone := 0
	for i, r := range exportAll("first") {
		if len(r.Partitions) != 4 || r.Commit.SnapshotID == 0 {
			t.Fatalf("first export of shard %d: %+v; want its 4 partitions committed", i, r)
		}
		redone += r.Commit.Attempts - 1
	}
	tb := loadUsage(t, c)
	sameRows(t, tb, stores...)
	if got := len(tb.Metadata().Snapshots()); got != shards {
		t.Fatalf("%d snapshots, want one per shard (%d)", got, shards)
	}
	before := dataFiles(t, tb)
	scheme := map[bool]string{false: "file://", true: "s3://"}[lake.OnS3(c.Warehouse)]
	for k, fs := range before {
		if want := tb.Location() + "/data/" + strings.Replace(k, " ", "/", 1) + "/"; !strings.HasPrefix(fs[0], want) || !strings.HasPrefix(want, scheme) {
			t.Fatalf("%s: file %s is not in the table's folder for the partition, %s", k, fs[0], want)
		}
	}

	for i, s := range stores {
		loadMonth(t, s, fmt.Sprintf("org-%d-b", i), sep, 7)
	}
	for i, r := range exportAll("second") {
		if want := (Partition{Organization: fmt.Sprintf("org-%d-b", i), Month: sep}); len(r.Partitions) != 1 || r.Partitions[0] != want {
			t.Fatalf("second export of shard %d: partitions %v; want %v only", i, r.Partitions, want)
		}
		redone += r.Commit.Attempts - 1
	}
	tb = loadUsage(t, c)
	sameRows(t, tb, stores...)
	after := dataFiles(t, tb)
	for k, fs := range before {
		changed := strings.HasSuffix(strings.Fields(k)[0], "-b") && strings.HasSuffix(k, "2026-09")
		if same := slices.Equal(after[k], fs); same == changed {
			t.Errorf("%s: files %v became %v; want them replaced %v", k, fs, after[k], changed)
		}
	}
	t.Logf("%d shards committed twice each; %d redo(s) after lost races", shards, redone)
}

// BenchmarkShardsCommitAtOnce has eight shards, each its own store of one
// organization's two months of daily usage, commit at once into one new
// catalog (the embedded SQLite one, and PostgreSQL), each through its own
// tally-lake process: every one must land, and the redos after lost races
// are reported (scripts/bench.sh --only lake):
//
//	go test ./export -run '^$' -bench ShardsCommitAtOnce -benchtime 5x
func BenchmarkShardsCommitAtOnce(b *testing.B) {
	const shards = 8
	stores := make([]*store.Store, shards)
	for i := range stores {
		stores[i] = openStore(b)
		loadMonth(b, stores[i], fmt.Sprintf("shard-%d", i), aug, 0)
		loadMonth(b, stores[i], fmt.Sprintf("shard-%d", i), sep, 0)
	}
	helper := laketest.Helper(b)
	for _, cat := range []string{"sqlite", "postgres"} {
		b.Run(cat, func(b *testing.B) {
			var redos, worst, commits int
			var last []int
			for b.Loop() {
				c := lakeConfig(b)
				if cat == "postgres" {
					c = Config{Postgres: pgtest.Database(b), Password: pgtest.Password, Warehouse: filepath.Join(b.TempDir(), "warehouse")}
				}
				attempts := make([]int, shards)
				errs := make([]error, shards)
				var wg sync.WaitGroup
				for i, s := range stores {
					wg.Add(1)
					go func() {
						defer wg.Done()
						res, err := export.CommitLake(context.Background(), s, export.LakeOptions{Config: c, Source: s.Path(),
							RunID: fmt.Sprintf("shard-%d", i), Version: "bench", Helper: helper}, zerolog.Nop())
						attempts[i], errs[i] = res.Commit.Attempts, err
					}()
				}
				wg.Wait()
				for i, err := range errs {
					if err != nil {
						b.Fatalf("shard %d: %v", i, err)
					}
					redos += attempts[i] - 1
					worst = max(worst, attempts[i])
					commits++
				}
				last = attempts
			}
			b.ReportMetric(float64(redos)/float64(commits), "redos/shard")
			b.ReportMetric(float64(worst), "max-attempts")
			b.Logf("%d shards committed at once on %s, every one landed; the last round's attempts by shard: %v", shards, cat, last)
		})
	}
}

// TestLakeOnS3KilledBetweenUploadAndCommit: on a warehouse on S3, a
// commit that fails after tally-lake uploaded its files (as a kill
// between the two would leave them) leaves the table as it was and the
// uploads in no snapshot; maintenance keeps them while younger than
// lake.orphan_age and then deletes them, so that the bucket's data folder
// holds exactly the current snapshot's files.
func TestLakeOnS3KilledBetweenUploadAndCommit(t *testing.T) {
	ctx := context.Background()
	s := openStore(t)
	loadMonth(t, s, "acme", aug, 0)
	loadMonth(t, s, "globex", aug, 0)
	c := Config{Postgres: pgtest.Database(t), Password: pgtest.Password}
	c.Warehouse, c.S3 = s3test.Warehouse(t)
	commit(t, s, c, "run-1")
	loadMonth(t, s, "acme", aug, 3)
	commit(t, s, c, "run-2")
	tb := loadUsage(t, c)
	before := lakeRows(t, tb)

	local := filepath.Join(t.TempDir(), "killed.parquet")
	if _, err := s.DB().ExecContext(ctx, `COPY (SELECT * FROM usage LIMIT 3) TO `+store.QuoteString(local)+` (FORMAT parquet)`); err != nil {
		t.Fatal(err)
	}
	data := tb.Location() + "/data/acme/2026-08/"
	req := lake.Request{Op: "replace", Catalog: c, Table: lake.UsageTable, Columns: lake.UsageColumns,
		Partitions: []lake.Partition{{Organization: "acme", Month: aug}},
		Files:      []string{data + "killed.parquet", data + "never-uploaded.parquet"},
		Uploads:    []lake.Upload{{From: local, To: data + "killed.parquet"}}}
	var cm lake.Commit
	if err := lake.Call(ctx, laketest.Helper(t), req, &cm, zerolog.Nop()); err == nil {
		t.Fatalf("a commit of a file that is not there committed %+v", cm)
	}
	tb = loadUsage(t, c)
	if got := lakeRows(t, tb); !slices.Equal(got, before) {
		t.Fatal("the failed commit changed the table")
	}
	bucket, prefix, _ := strings.Cut(strings.TrimPrefix(tb.Location(), "s3://"), "/")
	keys := func() []string { return s3test.Keys(t, bucket, prefix+"/data/") }
	if !slices.Contains(keys(), prefix+"/data/acme/2026-08/killed.parquet") {
		t.Fatalf("the upload is not in the bucket: %v", keys())
	}

	maintain := func(orphanAge time.Duration) lake.Maintained {
		t.Helper()
		var m lake.Maintained
		req := lake.Request{Op: "maintain", Catalog: c, Table: lake.UsageTable, KeepSnapshots: 0, OrphanAge: orphanAge}
		if err := lake.Call(ctx, laketest.Helper(t), req, &m, zerolog.Nop()); err != nil {
			t.Fatal(err)
		}
		return m
	}
	if m := maintain(configs.MinOrphanAge); m.Expired != 1 || m.Orphans != 0 || !slices.Contains(keys(), prefix+"/data/acme/2026-08/killed.parquet") {
		t.Fatalf("maintain with a day's age: %+v; want run-1's snapshot expired and the day-young upload kept", m)
	}
	if m := maintain(0); m.Orphans != 1 {
		t.Fatalf("maintain: %+v; want the upload deleted", m)
	}
	tb = loadUsage(t, c)
	sameRows(t, tb, s)
	var want []string
	for _, fs := range dataFiles(t, tb) {
		for _, f := range fs {
			want = append(want, strings.TrimPrefix(f, "s3://"+bucket+"/"))
		}
	}
	slices.Sort(want)
	if got := keys(); !slices.Equal(got, want) {
		t.Fatalf("after maintenance the bucket's data folder holds\n%v\nwant the current snapshot's files\n%v", got, want)
	}
}
