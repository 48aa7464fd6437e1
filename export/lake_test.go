package export

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/tally-dev/tally/configs"
	"github.com/tally-dev/tally/fetch/sim"
	"github.com/tally-dev/tally/internal/secret"
	"github.com/tally-dev/tally/internal/testkit/laketest"
	"github.com/tally-dev/tally/internal/testkit/pgtest"
	"github.com/tally-dev/tally/internal/testkit/s3test"
	"github.com/tally-dev/tally/internal/testkit/storetest"
	"github.com/tally-dev/tally/job"
	"github.com/tally-dev/tally/lake"
	"github.com/tally-dev/tally/lake/ice"
	"github.com/tally-dev/tally/schedules"
	"github.com/tally-dev/tally/store"
)

// A job whose export is format iceberg commits what its fetch loaded to
// the lake's usage table under the job's run; tally export of the copy
// the run published then finds nothing changed and commits nothing.
func TestIcebergExportStepAndCommand(t *testing.T) {
	ctx := context.Background()
	laketest.OnPath(t)
	dir := t.TempDir()
	now := func() time.Time { return time.Date(2026, 10, 20, 12, 0, 0, 0, time.UTC) }
	srv := sim.New(sim.Options{Seed: 5, Start: storetest.Date(t, "2026-09-01"), Now: now, PageSize: 500})
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	cfg, err := configs.Parse([]byte(fmt.Sprintf(`api:
  base_url: %s
  timeout: 20s
usage:
  granularity: day
  start: 2026-09-01
  window: 31d
store:
  path: tally.duckdb
export:
  dir: exports
  format: iceberg
lake:
  namespace: finance
`, ts.URL)), dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	log := zerolog.Nop()
	runner := &schedules.Runner{Config: cfg, Token: secret.New(srv.Token()), Log: log, Version: "v-step", Now: now}
	sum, err := runner.RunJob(ctx, "run", configs.Job{Name: "nightly", Cron: "@daily", Run: []string{"fetch", "export"}})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Run.Status != store.RunOK {
		t.Fatalf("job: %+v", sum)
	}
	lc, err := lake.ConfigFor(cfg, cfg.Export.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if lc.SQLite != filepath.Join(dir, "exports", "lake", "catalog.db") || lc.Warehouse != filepath.Join(dir, "exports", "lake", "warehouse") {
		t.Fatalf("default lake %+v: want the catalog and warehouse in exports/lake", lc)
	}
	l, err := ice.Open(ctx, lc)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	tb, err := l.LoadTable(ctx, lake.UsageTable)
	if err != nil {
		t.Fatal(err)
	}
	snap := tb.CurrentSnapshot()
	if snap == nil {
		t.Fatal("the export step committed nothing")
	}
	if got := snap.Summary.Properties; got[lake.SummaryRunID] != sum.Run.ID.String() || got[lake.SummaryVersion] != "v-step" {
		t.Errorf("snapshot summary %v: want the job's run %s and version v-step", got, sum.Run.ID)
	}
	at, err := tb.Scan().ToArrowTable(ctx)
	if err != nil {
		t.Fatal(err)
	}
	lakeRows := at.NumRows()
	at.Release()

	pub, err := schedules.OpenPublished(ctx, cfg, log)
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Close()
	if rows := storetest.Count(t, pub, `SELECT count(*) FROM usage`); rows == 0 || rows != lakeRows {
		t.Fatalf("the lake holds %d rows, the run loaded %d", lakeRows, rows)
	}
	env := &job.Env{Config: cfg, Store: pub, Log: log, Clock: now, Version: "v-cmd"}
	es, err := Run(ctx, env, Request{Format: configs.ExportIceberg, RunID: store.NewRunID()})
	if err != nil {
		t.Fatal(err)
	}
	if es.Format != FormatIceberg || len(es.Datasets) != 1 || es.Datasets[0].Name != "finance.usage" || len(es.Datasets[0].Written) != 0 {
		t.Fatalf("tally export after the step: %+v; want nothing written to finance.usage", es)
	}
	if err := tb.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if got := tb.CurrentSnapshot().SnapshotID; got != snap.SnapshotID {
		t.Fatalf("tally export with nothing changed committed snapshot %d", got)
	}

	_, err = Run(ctx, env, Request{Format: configs.ExportIceberg, From: storetest.Date(t, "2026-10-01")})
	if err == nil || !strings.Contains(err.Error(), "--from, --until, --csv and --focus-version do not apply") {
		t.Fatalf("format iceberg with --from: %v", err)
	}
}

func TestMain(m *testing.M) {
	code := m.Run()
	laketest.Remove()
	pgtest.Stop()
	s3test.Stop()
	os.Exit(code)
}

// TestStaging: for a table on S3, a partition's file is written into the
// staging folder and goes to the table's data folder for its partition;
// the export removes its own staged files, and the files a killed export
// left once a day old, never a younger one's or anything else.
func TestStaging(t *testing.T) {
	staging := filepath.Join(t.TempDir(), "staging")
	if err := os.MkdirAll(staging, 0o750); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-25 * time.Hour)
	for name, at := range map[string]time.Time{"killed.parquet": old, "running.parquet": time.Now(), "notes.txt": old} {
		p := filepath.Join(staging, name)
		if err := os.WriteFile(p, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, at, at); err != nil {
			t.Fatal(err)
		}
	}
	d, err := dataFolder("s3://lake/p/tally.db/usage/", staging)
	if err != nil {
		t.Fatal(err)
	}
	local, uri, err := d.place(lake.Partition{Organization: "Acme Corp", Month: time.Date(2026, 8, 1, 0, 0, 0, 0, time.UTC)}, "run/1")
	if err != nil {
		t.Fatal(err)
	}
	name := filepath.Base(local)
	if filepath.Dir(local) != staging || !strings.HasPrefix(name, "run_1-") || uri != "s3://lake/p/tally.db/usage/data/Acme_Corp/2026-08/"+name {
		t.Fatalf("placed at %s, for %s", local, uri)
	}
	if err := os.WriteFile(local, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	d.clean(zerolog.Nop())
	var left []string
	entries, _ := os.ReadDir(staging)
	for _, e := range entries {
		left = append(left, e.Name())
	}
	if strings.Join(left, " ") != "notes.txt running.parquet" {
		t.Fatalf("the staging folder holds %v; want the young export's file and the other file only", left)
	}
}
