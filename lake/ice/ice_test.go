package ice

import (
	"context"
	"errors"
	"fmt"
	iofs "io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/rs/zerolog"

	"github.com/tally-dev/tally/internal/testkit/laketest"
	"github.com/tally-dev/tally/internal/testkit/pgtest"
	"github.com/tally-dev/tally/internal/testkit/s3test"
	"github.com/tally-dev/tally/lake"
)

var (
	aug = time.Date(2026, 8, 1, 0, 0, 0, 0, time.UTC)
	sep = time.Date(2026, 9, 1, 0, 0, 0, 0, time.UTC)
)

func TestMain(m *testing.M) {
	code := m.Run()
	laketest.Remove()
	pgtest.Stop()
	s3test.Stop()
	os.Exit(code)
}

func lakeConfig(t *testing.T) lake.Config {
	dir := t.TempDir()
	return lake.Config{SQLite: filepath.Join(dir, "catalog.db"), Warehouse: filepath.Join(dir, "warehouse")}
}

// postgresConfig is a lake whose catalog is a new database on a real
// PostgreSQL server, as several machines share one.
func postgresConfig(t *testing.T) lake.Config {
	return lake.Config{Postgres: pgtest.Database(t), Password: pgtest.Password, Warehouse: filepath.Join(t.TempDir(), "warehouse")}
}

// s3Config is a lake as several machines share one with nothing but
// the network between them: a PostgreSQL catalog and a warehouse in a
// bucket of a real S3 server.
func s3Config(t *testing.T) lake.Config {
	c := postgresConfig(t)
	c.Warehouse, c.S3 = s3test.Warehouse(t)
	return c
}

// onEachCatalog runs test on the embedded SQLite catalog, on a
// PostgreSQL one, and on a PostgreSQL one with its warehouse on S3: the
// races and the redo must hold on each.
func onEachCatalog(t *testing.T, test func(*testing.T, lake.Config)) {
	t.Run("sqlite", func(t *testing.T) { test(t, lakeConfig(t)) })
	t.Run("postgres", func(t *testing.T) { test(t, postgresConfig(t)) })
	t.Run("postgres-s3", func(t *testing.T) { test(t, s3Config(t)) })
}

// staged are the files a commit of the local files fs adds, and the
// uploads that put them there, as tally hands them to tally-lake: in a
// folder, each is committed where it is; on S3, each is copied to the
// table's data folder under its own name.
func staged(t *testing.T, l *Lake, fs ...string) ([]string, []lake.Upload) {
	t.Helper()
	var files []string
	var ups []lake.Upload
	if !lake.OnS3(l.warehouse) {
		for _, f := range fs {
			files = append(files, "file://"+f)
		}
		return files, nil
	}
	tb, err := l.EnsureTable(context.Background(), lake.UsageTable, lake.UsageColumns)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fs {
		to := tb.Location() + "/data/" + filepath.Base(f)
		files, ups = append(files, to), append(ups, lake.Upload{From: f, To: to})
	}
	return files, ups
}

// put puts the local file f where staged says a commit would, without
// committing it, and returns where.
func put(t *testing.T, l *Lake, f string) string {
	t.Helper()
	files, ups := staged(t, l, f)
	if len(ups) > 0 {
		if err := l.upload(context.Background(), Replacement{Table: lake.UsageTable, Columns: lake.UsageColumns, Files: files, Uploads: ups}); err != nil {
			t.Fatal(err)
		}
	}
	return files[0]
}

// exists says whether the table's storage holds the file at uri.
func exists(t *testing.T, l *Lake, uri string) bool {
	t.Helper()
	tb, err := l.LoadTable(context.Background(), lake.UsageTable)
	if err != nil {
		t.Fatal(err)
	}
	fsys, err := tb.FS(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	f, err := fsys.Open(uri)
	if errors.Is(err, iofs.ErrNotExist) {
		return false
	}
	if err != nil {
		t.Fatalf("open %s: %v", uri, err)
	}
	f.Close()
	return true
}

func open(t *testing.T, c lake.Config) *Lake {
	t.Helper()
	l, err := Open(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// writeFile writes, as tally would, a Parquet file with the table's field
// ids holding rows of org's month, one a day, each costing cost; the
// other columns are null.
func writeFile(t *testing.T, dir, org string, month time.Time, cost string) string {
	t.Helper()
	sc, err := Schema(lake.UsageColumns)
	if err != nil {
		t.Fatal(err)
	}
	asc, err := table.SchemaToArrowSchema(sc, nil, true, false)
	if err != nil {
		t.Fatal(err)
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, asc)
	defer b.Release()
	dec, err := decimal128.FromString(cost, 38, 12)
	if err != nil {
		t.Fatal(err)
	}
	for d := month; d.Before(month.AddDate(0, 1, 0)); d = d.AddDate(0, 0, 1) {
		for i, c := range lake.UsageColumns {
			fb := b.Field(i)
			switch c.Name {
			case "organization":
				fb.(*array.StringBuilder).Append(org)
			case "date":
				fb.(*array.TimestampBuilder).Append(arrow.Timestamp(d.UnixMicro()))
			case "cost":
				fb.(*array.Decimal128Builder).Append(dec)
			case "currency":
				fb.(*array.StringBuilder).Append("USD")
			default:
				fb.AppendNull()
			}
		}
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	tbl := array.NewTableFromRecords(asc, []arrow.RecordBatch{rec})
	defer tbl.Release()
	if err := os.MkdirAll(dir, 0o750); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, fmt.Sprintf("%s-%s-%d.parquet", org, month.Format("2006-01"), time.Now().UnixNano()))
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := pqarrow.WriteTable(tbl, f, 1<<20, parquet.NewWriterProperties(), pqarrow.DefaultWriterProps()); err != nil {
		t.Fatal(err)
	}
	return path
}

// atBarrier is a Replacement's Loaded hook that holds each writer's
// first attempt at barrier until every writer has loaded the table, so
// that they race to commit.
func atBarrier(barrier *sync.WaitGroup) func(attempt int) {
	return func(attempt int) {
		if attempt == 1 {
			barrier.Done()
			barrier.Wait()
		}
	}
}

// replace commits the local files fs for parts (staged) and fails the
// test on an error.
func replace(t *testing.T, l *Lake, parts []lake.Partition, fs []string, run string) lake.Commit {
	t.Helper()
	files, ups := staged(t, l, fs...)
	c, err := l.Replace(context.Background(), Replacement{Table: lake.UsageTable, Columns: lake.UsageColumns,
		Partitions: parts, Files: files, Uploads: ups, Properties: iceberg.Properties{lake.SummaryRunID: run}})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// filesByPartition are the names of the data files of the table's
// current snapshot, by partition ("org 2026-09"): the names the tests
// wrote them under, wherever staged put them.
func filesByPartition(t *testing.T, l *Lake) map[string][]string {
	t.Helper()
	tb, err := l.LoadTable(context.Background(), lake.UsageTable)
	if err != nil {
		t.Fatal(err)
	}
	tasks, err := tb.Scan().PlanFiles(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for _, task := range tasks {
		p := task.File.Partition()
		month := p[1001].(int32)
		k := fmt.Sprintf("%s %s", p[1000], time.Date(1970, time.Month(1+month), 1, 0, 0, 0, 0, time.UTC).Format("2006-01"))
		out[k] = append(out[k], path.Base(task.File.FilePath()))
	}
	for _, fs := range out {
		slices.Sort(fs)
	}
	return out
}

func TestReplaceSwapsWholePartitions(t *testing.T) { onEachCatalog(t, testReplaceSwapsWholePartitions) }

func testReplaceSwapsWholePartitions(t *testing.T, c lake.Config) {
	l := open(t, c)
	dir := t.TempDir()
	first := map[string][]string{}
	var parts []lake.Partition
	var files []string
	for _, org := range []string{"acme", "globex"} {
		for _, m := range []time.Time{aug, sep} {
			f := writeFile(t, dir, org, m, "1.000000000001")
			parts, files = append(parts, lake.Partition{Organization: org, Month: m}), append(files, f)
			first[org+" "+m.Format("2006-01")] = []string{filepath.Base(f)}
		}
	}
	if c := replace(t, l, parts, files, "run-1"); c.SnapshotID == 0 || c.Dropped != 0 || c.Attempts != 1 {
		t.Fatalf("first commit %+v; want a snapshot that drops nothing, at the first attempt", c)
	}
	if got := filesByPartition(t, l); !mapsEqual(got, first) {
		t.Fatalf("files %v, want %v", got, first)
	}
	tb, _ := l.LoadTable(context.Background(), lake.UsageTable)
	if got := tb.Metadata().Version(); got != 2 {
		t.Errorf("format version %d, want 2", got)
	}
	if cost, _ := tb.Schema().FindFieldByName("cost"); cost.Type.String() != "decimal(38, 12)" {
		t.Errorf("cost is %s, want decimal(38, 12)", cost.Type)
	}

	// acme's September again: exactly its file is swapped.
	f := writeFile(t, dir, "acme", sep, "2.5")
	if c := replace(t, l, []lake.Partition{{Organization: "acme", Month: sep}}, []string{f}, "run-2"); c.Dropped != 1 {
		t.Fatalf("second commit dropped %d files, want acme's September's 1", c.Dropped)
	}
	want := maps(first)
	want["acme 2026-09"] = []string{filepath.Base(f)}
	if got := filesByPartition(t, l); !mapsEqual(got, want) {
		t.Fatalf("after acme's September: files %v, want %v", got, want)
	}
	tb, _ = l.LoadTable(context.Background(), lake.UsageTable)
	if s := tb.CurrentSnapshot(); s.Summary.Operation != table.OpOverwrite || s.Summary.Properties[lake.SummaryRunID] != "run-2" {
		t.Fatalf("second snapshot: %s %v; want an overwrite naming run-2", s.Summary.Operation, s.Summary.Properties)
	}
	// Read back through the scan: 30 days of acme's September at 2.5.
	at, err := tb.Scan(table.WithRowFilter(iceberg.EqualTo(iceberg.Reference("organization"), "acme"))).ToArrowTable(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer at.Release()
	if at.NumRows() != 31+30 {
		t.Fatalf("acme has %d rows, want 61 (August and September)", at.NumRows())
	}

	// State names the last commit from a source.
	st, err := l.State(context.Background(), lake.UsageTable, lake.UsageColumns, "db-a")
	if scheme := map[bool]string{false: "file://", true: "s3://"}[lake.OnS3(c.Warehouse)]; err != nil || st.Found || st.Table != "tally.usage" || !strings.HasPrefix(st.Location, scheme) {
		t.Fatalf("state of a source that never committed: %+v, %v", st, err)
	}
	at2 := time.Date(2026, 9, 30, 1, 2, 3, 4000, time.UTC)
	files, ups := staged(t, l, writeFile(t, dir, "acme", aug, "3"))
	if _, err := l.Replace(context.Background(), Replacement{Table: lake.UsageTable, Columns: lake.UsageColumns,
		Partitions: []lake.Partition{{Organization: "acme", Month: aug}}, Files: files, Uploads: ups,
		Properties: iceberg.Properties{lake.SummarySource: "db-a", lake.SummaryChangesThrough: at2.Format(time.RFC3339Nano)}}); err != nil {
		t.Fatal(err)
	}
	replace(t, l, []lake.Partition{{Organization: "globex", Month: aug}}, []string{writeFile(t, dir, "globex", aug, "4")}, "other")
	st, err = l.State(context.Background(), lake.UsageTable, lake.UsageColumns, "db-a")
	if err != nil || !st.Found || !st.ChangesThrough.Equal(at2) {
		t.Fatalf("state of db-a behind another writer's commit: %+v, %v; want its commit found, through %s", st, err, at2)
	}
}

func maps(m map[string][]string) map[string][]string {
	out := map[string][]string{}
	for k, v := range m {
		out[k] = slices.Clone(v)
	}
	return out
}

func mapsEqual(a, b map[string][]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if !slices.Equal(v, b[k]) {
			return false
		}
	}
	return true
}

func TestConflictRecognisesTheSQLCatalogsRequirementError(t *testing.T) {
	for _, err := range []error{
		errors.New(`requirement failed: branch "main" has changed: expected id 1, found 2`),
		errors.New(`requirement failed: branch "main" was created concurrently`),
		fmt.Errorf("x: %w", table.ErrCommitFailed),
	} {
		if !errors.Is(conflict(err), ErrConflict) {
			t.Errorf("%v: not taken for a conflict", err)
		}
	}
	for _, err := range []error{errors.New("disk full"), errors.New("requirement failed: last assigned partition id is missing")} {
		if errors.Is(conflict(err), ErrConflict) {
			t.Errorf("%v: taken for a conflict", err)
		}
	}
}

// TestStaleCommitIsAConflict commits from a table handle another writer
// made stale: the SQL catalog refuses it with its plain requirement
// error, which conflict takes for a lost race (Replace redoes it on the
// reloaded table), and the table is as the other writer left it.
func TestStaleCommitIsAConflict(t *testing.T) { onEachCatalog(t, testStaleCommitIsAConflict) }

func testStaleCommitIsAConflict(t *testing.T, c lake.Config) {
	ctx := context.Background()
	l := open(t, c)
	dir := t.TempDir()
	replace(t, l, []lake.Partition{{Organization: "acme", Month: aug}}, []string{writeFile(t, dir, "acme", aug, "1")}, "a-1")
	stale, err := l.LoadTable(ctx, lake.UsageTable)
	if err != nil {
		t.Fatal(err)
	}
	other := open(t, c)
	replace(t, other, []lake.Partition{{Organization: "globex", Month: aug}}, []string{writeFile(t, dir, "globex", aug, "1")}, "b-1")
	want := filesByPartition(t, l)

	// The raw error, as iceberg-go gives it.
	tx := stale.NewTransaction()
	if err := tx.AddFiles(ctx, []string{put(t, l, writeFile(t, dir, "acme", sep, "1"))}, nil, false); err != nil {
		t.Fatal(err)
	}
	_, err = tx.Commit(ctx)
	if err == nil || !strings.Contains(err.Error(), "requirement failed") || errors.Is(err, table.ErrCommitFailed) {
		t.Fatalf("a stale commit gave %v; want iceberg-go's plain requirement error (the trap this package wraps)", err)
	}
	if !errors.Is(conflict(err), ErrConflict) {
		t.Fatalf("%v: not taken for a conflict", err)
	}
	if got := filesByPartition(t, l); !mapsEqual(got, want) {
		t.Fatalf("after the refused commit: files %v, want %v", got, want)
	}
}

// TestTwoWritersAtOnce has two writers, each its own catalog connection
// (as two shards' processes), replace disjoint organizations' partitions
// behind a barrier: both load the table before either commits, so one of
// them must lose the race and redo; both land, none twice.
func TestTwoWritersAtOnce(t *testing.T) { onEachCatalog(t, testTwoWritersAtOnce) }

func testTwoWritersAtOnce(t *testing.T, c lake.Config) {
	ctx := context.Background()
	dir := t.TempDir()
	orgs := []string{"acme", "globex"}
	want := map[string][]string{}
	for round, month := range []time.Time{aug, sep, aug} {
		var barrier sync.WaitGroup
		barrier.Add(len(orgs))
		var mu sync.Mutex
		var redone []error
		var wg sync.WaitGroup
		errs := make([]error, len(orgs))
		for i, org := range orgs {
			f := writeFile(t, dir, org, month, fmt.Sprintf("%d.5", round))
			want[org+" "+month.Format("2006-01")] = []string{filepath.Base(f)}
			l := open(t, c)
			files, ups := staged(t, l, f)
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, errs[i] = l.Replace(ctx, Replacement{
					Table: lake.UsageTable, Columns: lake.UsageColumns,
					Partitions: []lake.Partition{{Organization: org, Month: month}}, Files: files, Uploads: ups,
					Properties: iceberg.Properties{lake.SummaryRunID: fmt.Sprintf("%s-%d", org, round)},
					// Both writers hold the table as it was before either
					// commits.
					Loaded: atBarrier(&barrier),
					Retried: func(attempt int, err error) {
						mu.Lock()
						redone = append(redone, err)
						mu.Unlock()
					},
				})
			}()
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Fatalf("round %d, writer %s: %v", round, orgs[i], err)
			}
		}
		if len(redone) == 0 {
			t.Fatalf("round %d: no writer had to redo its commit; the barrier should have made one lose", round)
		}
		for _, err := range redone {
			if !errors.Is(err, ErrConflict) {
				t.Fatalf("round %d: redone after %v, not a conflict", round, err)
			}
		}
		if got := filesByPartition(t, open(t, c)); !mapsEqual(got, want) {
			t.Fatalf("round %d: files %v, want %v", round, got, want)
		}
	}
}

// TestMaintainExpiresAndDeletesOrphans: maintenance expires the snapshots
// older than its age but the current one, deleting the files only they
// held, and deletes files no snapshot holds once old enough; a dry run
// changes nothing; the table reads as before.
func TestMaintainExpiresAndDeletesOrphans(t *testing.T) {
	onEachCatalog(t, testMaintainExpiresAndDeletesOrphans)
}

func testMaintainExpiresAndDeletesOrphans(t *testing.T, c lake.Config) {
	ctx := context.Background()
	l := open(t, c)
	dir := t.TempDir()
	f := writeFile(t, dir, "acme", aug, "1")
	replace(t, l, []lake.Partition{{Organization: "acme", Month: aug}}, []string{f}, "run-1")
	aug1, _ := staged(t, l, f)
	f = writeFile(t, dir, "acme", aug, "2")
	replace(t, l, []lake.Partition{{Organization: "acme", Month: aug}}, []string{f}, "run-2")
	aug2, _ := staged(t, l, f)
	tb, err := l.LoadTable(ctx, lake.UsageTable)
	if err != nil {
		t.Fatal(err)
	}
	// As a commit a kill cut short leaves it: in the table's data
	// folder, in no snapshot (on S3, uploaded and never committed).
	var stray string
	if lake.OnS3(c.Warehouse) {
		stray = put(t, l, writeFile(t, dir, "acme", sep, "9"))
	} else {
		stray = "file://" + writeFile(t, filepath.Join(strings.TrimPrefix(tb.Location(), "file://"), "data"), "acme", sep, "9")
	}
	time.Sleep(10 * time.Millisecond)

	dry, err := l.Maintain(ctx, lake.UsageTable, 0, 0, true)
	if err != nil {
		t.Fatal(err)
	}
	if dry.Expired != 1 || dry.Snapshots != 1 || dry.Orphans < 1 || !dry.DryRun {
		t.Fatalf("dry run: %+v; want 1 snapshot to expire, 1 kept, the stray file at least", dry)
	}
	for _, f := range []string{aug1[0], aug2[0], stray} {
		if !exists(t, l, f) {
			t.Fatalf("the dry run removed %s", f)
		}
	}
	young, err := l.Maintain(ctx, lake.UsageTable, time.Hour, time.Hour, false)
	if err != nil {
		t.Fatal(err)
	}
	if young.Expired != 0 || young.Orphans != 0 {
		t.Fatalf("with an hour's ages: %+v; want nothing expired or deleted, everything is younger", young)
	}

	m, err := l.Maintain(ctx, lake.UsageTable, 0, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	if m.Expired != 1 || m.Snapshots != 1 || m.Orphans < 1 {
		t.Fatalf("maintain: %+v; want 1 snapshot expired, 1 kept, the stray file deleted", m)
	}
	for f, want := range map[string]bool{aug1[0]: false, stray: false, aug2[0]: true} {
		if got := exists(t, l, f); got != want {
			t.Errorf("%s: exists %v, want %v", f, got, want)
		}
	}
	tb, err = l.LoadTable(ctx, lake.UsageTable)
	if err != nil {
		t.Fatal(err)
	}
	at, err := tb.Scan().ToArrowTable(ctx)
	if err != nil {
		t.Fatalf("the table after maintenance: %v", err)
	}
	defer at.Release()
	if at.NumRows() != 31 || len(tb.Metadata().Snapshots()) != 1 {
		t.Fatalf("after maintenance: %d rows, %d snapshots; want acme's August, 31 rows, in the one current snapshot", at.NumRows(), len(tb.Metadata().Snapshots()))
	}
	// A table the catalog lacks has nothing to maintain.
	if none, err := l.Maintain(ctx, "absent", 0, 0, false); err != nil || none.Expired != 0 || none.Orphans != 0 {
		t.Fatalf("a missing table: %+v, %v", none, err)
	}
}

// TestSamePartitionAtOnce has two writers replace the same partition
// behind a barrier: one commits, the other loses the race and redoes its
// replacement on the table as the first left it, so the partition ends
// with exactly the later writer's file, never both.
func TestSamePartitionAtOnce(t *testing.T) { onEachCatalog(t, testSamePartitionAtOnce) }

func testSamePartitionAtOnce(t *testing.T, c lake.Config) {
	ctx := context.Background()
	dir := t.TempDir()
	replace(t, open(t, c), []lake.Partition{{Organization: "acme", Month: aug}}, []string{writeFile(t, dir, "acme", aug, "1")}, "first")
	var barrier, wg sync.WaitGroup
	barrier.Add(2)
	local := []string{writeFile(t, dir, "acme", aug, "2"), writeFile(t, dir, "acme", aug, "3")}
	var mu sync.Mutex
	var order []string
	errs := make([]error, 2)
	for i, f := range local {
		l := open(t, c)
		files, ups := staged(t, l, f)
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = l.Replace(ctx, Replacement{
				Table: lake.UsageTable, Columns: lake.UsageColumns,
				Partitions: []lake.Partition{{Organization: "acme", Month: aug}}, Files: files, Uploads: ups,
				Loaded: atBarrier(&barrier),
			})
			mu.Lock()
			order = append(order, filepath.Base(f))
			mu.Unlock()
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	got := filesByPartition(t, open(t, c))
	if want := []string{order[1]}; len(got) != 1 || !slices.Equal(got["acme 2026-08"], want) {
		t.Fatalf("files %v; want the partition to hold only the later writer's file %v", got, want)
	}
}

// TestProcessesCommitAtOnce starts tally-lake processes at once, each
// replacing another organization's partition in one SQLite catalog file:
// the catalog's lock and the redo of lost races let every one land, once.
func TestProcessesCommitAtOnce(t *testing.T) { onEachCatalog(t, testProcessesCommitAtOnce) }

func testProcessesCommitAtOnce(t *testing.T, c lake.Config) {
	ctx := context.Background()
	helper := laketest.Helper(t)
	dir := t.TempDir()
	const n = 6
	want := map[string][]string{}
	reqs := make([]lake.Request, n)
	l := open(t, c)
	for i := range reqs {
		org := fmt.Sprintf("org-%d", i)
		f := writeFile(t, dir, org, sep, "1.25")
		want[org+" 2026-09"] = []string{filepath.Base(f)}
		files, ups := staged(t, l, f)
		reqs[i] = lake.Request{Op: "replace", Catalog: c, Table: lake.UsageTable, Columns: lake.UsageColumns,
			Partitions: []lake.Partition{{Organization: org, Month: sep}}, Files: files, Uploads: ups,
			Properties: map[string]string{lake.SummaryRunID: org}}
	}
	var wg sync.WaitGroup
	commits := make([]lake.Commit, n)
	errs := make([]error, n)
	for i := range reqs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = lake.Call(ctx, helper, reqs[i], &commits[i], zerolog.Nop())
		}()
	}
	wg.Wait()
	redone := 0
	for i, err := range errs {
		if err != nil {
			t.Fatalf("process %d: %v", i, err)
		}
		redone += commits[i].Attempts - 1
	}
	got := filesByPartition(t, open(t, c))
	if !mapsEqual(got, want) {
		t.Fatalf("files %v; want every process's partition once: %v", got, want)
	}
	tb, _ := open(t, c).LoadTable(ctx, lake.UsageTable)
	if s := len(tb.Metadata().Snapshots()); s != n {
		t.Fatalf("%d snapshots, want one per process (%d)", s, n)
	}
	t.Logf("%d processes committed; %d redo(s) after lost races", n, redone)
}

// TestPostgresCatalogErrors: a wrong password and a server that is not
// there each fail Open with an error naming the catalog, never the
// password, and a URL holding a password is never quoted with it.
func TestPostgresCatalogErrors(t *testing.T) {
	c := postgresConfig(t)
	ctx := context.Background()
	wrong := c
	wrong.Password = "not-the-password-7e1c"
	_, err := Open(ctx, wrong)
	if err == nil || !strings.Contains(err.Error(), "connect to the catalog postgres://tally@127.0.0.1") || strings.Contains(err.Error(), wrong.Password) {
		t.Fatalf("a wrong password: %v; want an error naming the catalog and not the password", err)
	}
	gone := c
	gone.Postgres = "postgres://tally:in-the-url-5d2b@127.0.0.1:1/none?sslmode=disable&connect_timeout=5"
	_, err = Open(ctx, gone)
	if err == nil || !strings.Contains(err.Error(), "postgres://tally:xxxxx@127.0.0.1:1/none") || strings.Contains(err.Error(), "in-the-url-5d2b") || strings.Contains(err.Error(), c.Password) {
		t.Fatalf("no server: %v; want an error naming the catalog without either password", err)
	}
}

// TestFilesListsTheCurrentSnapshot: Files gives each partition's files of
// the current snapshot only (a replaced file is gone), with their rows;
// a table the catalog lacks is not found, and not an error.
func TestFilesListsTheCurrentSnapshot(t *testing.T) {
	l := open(t, lakeConfig(t))
	ctx := context.Background()
	if f, err := l.Files(ctx, lake.UsageTable); err != nil || f.Found || len(f.Partitions) != 0 {
		t.Fatalf("files of a missing table: %+v, %v", f, err)
	}
	dir := t.TempDir()
	old := writeFile(t, dir, "acme", aug, "1")
	replace(t, l, []lake.Partition{{Organization: "acme", Month: aug}, {Organization: "globex", Month: sep}},
		[]string{old, writeFile(t, dir, "globex", sep, "2")}, "run-1")
	newer := writeFile(t, dir, "acme", aug, "3")
	c := replace(t, l, []lake.Partition{{Organization: "acme", Month: aug}}, []string{newer}, "run-2")
	f, err := l.Files(ctx, lake.UsageTable)
	if err != nil {
		t.Fatal(err)
	}
	if !f.Found || f.SnapshotID != c.SnapshotID || f.Table != "tally.usage" || len(f.Partitions) != 2 {
		t.Fatalf("files: %+v; want 2 partitions in snapshot %d", f, c.SnapshotID)
	}
	a, g := f.Partitions[0], f.Partitions[1]
	if a.Organization != "acme" || !a.Month.Equal(aug) || len(a.Files) != 1 || strings.TrimPrefix(a.Files[0], "file://") != newer || a.Rows != 31 {
		t.Errorf("acme's August: %v %v %d rows; want only the newer file %s, 31 rows", a.Partition, a.Files, a.Rows, newer)
	}
	if g.Organization != "globex" || !g.Month.Equal(sep) || g.Rows != 30 {
		t.Errorf("globex's September: %v %d rows; want 30 rows", g.Partition, g.Rows)
	}
}

// TestOpenAtOnceOnANewCatalog has eight writers meet a new, empty catalog
// database at once, as shards' first exports do: each must open it (its
// tables, the namespace) without tripping over another's set-up.
func TestOpenAtOnceOnANewCatalog(t *testing.T) { onEachCatalog(t, testOpenAtOnceOnANewCatalog) }

func testOpenAtOnceOnANewCatalog(t *testing.T, c lake.Config) {
	var start, wg sync.WaitGroup
	start.Add(1)
	errs := make([]error, 8)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			start.Wait()
			l, err := Open(context.Background(), c)
			if err == nil {
				_, err = l.EnsureTable(context.Background(), lake.UsageTable, lake.UsageColumns)
				l.Close()
			}
			errs[i] = err
		}()
	}
	start.Done()
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("writer %d: %v", i, err)
		}
	}
}

// TestUploadsStayInTheDataFolder: an upload goes only to one of the files
// the commit adds, under the table's data folder; anything else is
// refused before a byte is written or a snapshot made.
func TestUploadsStayInTheDataFolder(t *testing.T) {
	c := lakeConfig(t)
	l := open(t, c)
	f := writeFile(t, t.TempDir(), "acme", aug, "1")
	tb, err := l.EnsureTable(context.Background(), lake.UsageTable, lake.UsageColumns)
	if err != nil {
		t.Fatal(err)
	}
	data := tb.Location() + "/data/"
	for to, want := range map[string]string{
		tb.Location() + "/metadata/x.parquet": "not under the table's data folder",
		data + "../metadata/x.parquet":        "not under the table's data folder",
		"file:///etc/x.parquet":               "not under the table's data folder",
		data + "acme/x.parquet":               "not one of the files the commit adds",
	} {
		files := []string{data + "acme/y.parquet"}
		_, err := l.Replace(context.Background(), Replacement{Table: lake.UsageTable, Columns: lake.UsageColumns,
			Partitions: []lake.Partition{{Organization: "acme", Month: aug}}, Files: files, Uploads: []lake.Upload{{From: f, To: to}}})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("upload to %s: %v; want %q", to, err, want)
		}
	}
	if tb, _ := l.LoadTable(context.Background(), lake.UsageTable); tb.CurrentSnapshot() != nil {
		t.Fatal("a refused upload made a snapshot")
	}
}
