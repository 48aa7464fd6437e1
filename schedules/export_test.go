package schedules

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/tally-dev/tally/configs"
	"github.com/tally-dev/tally/internal/focuscheck"
	"github.com/tally-dev/tally/store"
)

// A job with the export step exports what its fetch just loaded, under
// the job's run; tally export then exports the published copy.
func TestExportStepAndCommand(t *testing.T) {
	h := newHarness(t, setup{granularity: "day", start: "2026-09-01", now: "2026-10-20T12:00:00Z"})
	cfg := h.runner.Config
	cfg.Export = configs.ExportConfig{Dir: filepath.Join(h.dir, "lake"), Format: configs.ExportFOCUS, FOCUSCSV: true}
	job := configs.Job{Name: "nightly", Cron: "@daily", Run: []string{"fetch", "export"}}
	sum, err := h.runner.RunJob(context.Background(), "run", job)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Run.Status != store.RunOK || !slices.Contains(sum.Outputs, cfg.Export.Dir) {
		t.Fatalf("job: %+v", sum)
	}
	st, err := store.Open(context.Background(), store.PublishedPath(h.db), store.ReadOnly())
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
	for _, dataset := range []string{"focus", "focus_csv"} {
		ext := map[string]string{"focus": "parquet", "focus_csv": "csv"}[dataset]
		glob := filepath.Join(cfg.Export.Dir, dataset, "*", "*."+ext)
		if got := countOf(`SELECT count(*) FROM read_` + ext + `('` + glob + `')`); got != rows {
			t.Errorf("%s holds %d rows, the run loaded %d", dataset, got, rows)
		}
	}

	// tally export: the published copy, the command's options over the
	// config's.
	r := &Runner{Config: cfg, Log: h.runner.Log, Now: h.clock.Now}
	out := filepath.Join(h.dir, "parquet")
	es, err := r.Export(context.Background(), ExportOptions{Dir: out, Format: configs.ExportParquet})
	if err != nil {
		t.Fatal(err)
	}
	if es.Source != store.PublishedPath(h.db) || es.Datasets[0].Name != "usage" || es.Datasets[0].Rows != rows {
		t.Errorf("export summary %+v", es)
	}
	if _, err := os.Stat(filepath.Join(out, "usage", "month=2026-10", "data_0.parquet")); err != nil {
		t.Error(err)
	}
}
