package export

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/tally-dev/tally/configs"
	"github.com/tally-dev/tally/fetch/sim"
	// The job this test runs fetches first: ingest registers the step.
	_ "github.com/tally-dev/tally/ingest"
	"github.com/tally-dev/tally/internal/secret"
	"github.com/tally-dev/tally/internal/testkit/focuscheck"
	"github.com/tally-dev/tally/internal/testkit/storetest"
	"github.com/tally-dev/tally/job"
	"github.com/tally-dev/tally/schedules"
	"github.com/tally-dev/tally/store"
)

// A job with the export step exports what its fetch just loaded, under
// the job's run; tally export then exports the published copy.
func TestExportStepAndCommand(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "tally.duckdb")
	now := func() time.Time { return time.Date(2026, 10, 20, 12, 0, 0, 0, time.UTC) }
	srv := sim.New(sim.Options{Seed: 3, Start: storetest.Date(t, "2026-09-01"), Now: now, PageSize: 500})
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	cfg, err := configs.Parse([]byte(fmt.Sprintf(`api:
  base_url: %s
  concurrency: 3
  timeout: 20s
usage:
  granularity: day
  start: 2026-09-01
  lookback: 2d
  window: 7d
store:
  path: tally.duckdb
schedule:
  lock_wait: 200ms
commitments:
  - {entitlement: ent-not-loaded, type: usage, quantity: 1000, unit: Minutes, start: 2026-09-01, end: 2027-08-31}
`, ts.URL)), dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Export = configs.ExportConfig{Dir: filepath.Join(dir, "lake"), Format: configs.ExportFOCUS, FOCUSCSV: true}
	log := zerolog.Nop()
	runner := &schedules.Runner{Config: cfg, Token: secret.New(srv.Token()), Log: log, Version: "test", Now: now}
	nightly := configs.Job{Name: "nightly", Cron: "@daily", Run: []string{"fetch", "export"}}
	sum, err := runner.RunJob(context.Background(), "run", nightly)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Run.Status != store.RunOK || !slices.Contains(sum.Outputs, cfg.Export.Dir) {
		t.Fatalf("job: %+v", sum)
	}
	st, err := store.Open(context.Background(), store.PublishedPath(db), store.ReadOnly())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	countOf := func(q string) int64 {
		t.Helper()
		res, err := st.Query(context.Background(), q)
		if err != nil {
			t.Fatal(err)
		}
		return res.Rows[0][0].(int64)
	}
	rows := countOf(`SELECT count(*) FROM usage`)
	if rows == 0 {
		t.Fatal("the fetch loaded nothing")
	}
	// The simulated interface's data, every entitlement type and payment
	// method variant, conforms to FOCUS 1.3 (internal/focuscheck): Cost
	// and Usage, Contract Commitment, their join, the metadata.
	v, err := focuscheck.ExportViolations(context.Background(), st.DB(), cfg.Export.Dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range v {
		t.Errorf("FOCUS 1.3 on the simulated interface's data: %s", line)
	}
	// The step hands the export the config's commitments: one naming an
	// entitlement the usage does not hold is listed as such.
	man, err := readManifest(cfg.Export.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if man.FOCUS == nil || man.FOCUS.Commitments == nil || len(man.FOCUS.Commitments.Unmatched) != 1 ||
		!strings.HasPrefix(man.FOCUS.Commitments.Unmatched[0], `commitments[0]: entitlement "ent-not-loaded" is on no charge`) {
		t.Errorf("manifest focus section %+v: want the config's commitment listed as matching no charge", man.FOCUS)
	}
	for _, dataset := range []string{"focus", "focus_csv"} {
		ext := map[string]string{"focus": "parquet", "focus_csv": "csv"}[dataset]
		glob := filepath.Join(cfg.Export.Dir, dataset, "*", "*."+ext)
		if got := countOf(`SELECT count(*) FROM read_` + ext + `('` + glob + `')`); got != rows {
			t.Errorf("%s holds %d rows, the run loaded %d", dataset, got, rows)
		}
	}

	// tally export: the published copy, the command's options over the
	// config's.
	pub, err := schedules.OpenPublished(context.Background(), cfg, log)
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Close()
	out := filepath.Join(dir, "parquet")
	es, err := Run(context.Background(), &job.Env{Config: cfg, Store: pub, Log: log, Clock: now}, Request{Dir: out, Format: configs.ExportParquet})
	if err != nil {
		t.Fatal(err)
	}
	if es.Source != store.PublishedPath(db) || es.Datasets[0].Name != "usage" || es.Datasets[0].Rows != rows {
		t.Errorf("export summary %+v", es)
	}
	if _, err := os.Stat(filepath.Join(out, "usage", "month=2026-10", "data_0.parquet")); err != nil {
		t.Error(err)
	}
}
