package schedules

import (
	"bytes"
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/xuri/excelize/v2"

	"github.com/tally-dev/tally/fetch"
	"github.com/tally-dev/tally/fetch/sim"
	"github.com/tally-dev/tally/store"
)

// TestDemo runs the demo at a fixed clock into a folder holding a previous
// demo's database: it starts afresh, its database and the analysts' copy
// equal the truth of a sim built like the demo's, and it writes the last full month's workbook; the random token
// stays in the token file alone.
func TestDemo(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "demo")
	now := time.Date(2025, 3, 6, 10, 30, 0, 0, time.UTC)
	var logs bytes.Buffer
	log := zerolog.New(zerolog.SyncWriter(&logs)).Level(zerolog.DebugLevel)

	// A previous demo's database, with a run and a window of its own.
	if err := os.MkdirAll(dir, 0o750); err != nil {
		t.Fatal(err)
	}
	old, err := store.Open(context.Background(), filepath.Join(dir, "tally.duckdb"))
	if err != nil {
		t.Fatal(err)
	}
	oldRun := store.NewRunID()
	if err := old.BeginRun(context.Background(), oldRun, "run", ""); err != nil {
		t.Fatal(err)
	}
	stale := fetch.UsageQuery{Window: fetch.Window{Start: day(t, "2025-02-03"), End: day(t, "2025-02-04"), Granularity: fetch.Hour}}
	if _, err := old.LoadWindow(context.Background(), stale, oldRun, func(yield func(fetch.MeterData, error) bool) {
		yield(fetch.MeterData{Date: day(t, "2025-02-03"), MeterName: "stale", Cost: fetch.MustDecimal("1"), Currency: "USD"}, nil)
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := old.Publish(context.Background()); err != nil {
		t.Fatal(err)
	}
	old.Close()

	res, err := Demo(context.Background(), dir, log, "test", now)
	if err != nil {
		t.Fatalf("demo: %v", err)
	}
	want := DemoResult{
		Dir: dir, Config: filepath.Join(dir, "tally.yaml"), Database: filepath.Join(dir, "tally.duckdb"),
		Published: filepath.Join(dir, "tally.published.duckdb"),
		Workbook:  filepath.Join(dir, "reports", "2025-02", "tally-cost-2025-02.xlsx"),
	}
	if res.Dir != want.Dir || res.Config != want.Config || res.Database != want.Database ||
		res.Published != want.Published || res.Workbook != want.Workbook {
		t.Errorf("demo result %+v\nwant paths %+v", res, want)
	}
	for _, p := range []string{res.Config, res.Database, res.Published, res.Workbook} {
		if _, err := os.Stat(p); err != nil {
			t.Error(err)
		}
	}

	// The demo's interface: seed 1, usage from the first of the previous
	// month, the demo's clock.
	s := sim.New(sim.Options{Seed: 1, Start: day(t, "2025-02-01"), Now: func() time.Time { return now }})
	q := fetch.UsageQuery{Window: fetch.Window{Start: day(t, "2025-02-01"), End: day(t, "2025-03-07"), Granularity: fetch.Hour}}
	truth := s.Truth(q)
	wantRows := renderAll(s.Rows(q))
	for _, path := range []string{res.Database, res.Published} {
		withDB(t, path, func(db *sql.DB) {
			got, n := totals(t, db, fetch.Hour, "usage", q.Window.Start, q.Window.End)
			if d := sameTotals(got, truth.Cost); d != "" || n != truth.Rows {
				t.Errorf("%s: %d rows (truth %d), totals differ: %s", path, n, truth.Rows, d)
			}
			if d := firstDiff(renderAll(stored(t, db, fetch.Hour, "usage", q.Window.Start, q.Window.End)), wantRows); d != "" {
				t.Errorf("%s: rows differ from the truth: %s", path, d)
			}
			var runs int
			if err := db.QueryRow(`SELECT count(*) FROM runs`).Scan(&runs); err != nil {
				t.Fatal(err)
			}
			if runs != 1 {
				t.Errorf("%s: %d runs; the demo should have started from a fresh database", path, runs)
			}
		})
	}

	f, err := excelize.OpenFile(res.Workbook)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	summary, err := f.GetRows("Summary", excelize.Options{RawCellValue: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := labelled(summary, "Last run id"); got != res.Nightly.RunID.String() {
		t.Errorf("workbook's last run id %q, want %s", got, res.Nightly.RunID)
	}

	tok, err := os.ReadFile(filepath.Join(dir, "token"))
	if err != nil {
		t.Fatal(err)
	}
	token := strings.TrimSpace(string(tok))
	if len(token) < 20 {
		t.Fatalf("demo token %d characters long", len(token))
	}
	if bytes.Contains(logs.Bytes(), []byte(token)) {
		t.Error("the demo token appears in the logs")
	}
	os.Remove(filepath.Join(dir, "token"))
	noTokenInFiles(t, dir, token)
	if store.PublishedPath(res.Database) != res.Published {
		t.Errorf("published copy at %s, want %s", res.Published, store.PublishedPath(res.Database))
	}
}
