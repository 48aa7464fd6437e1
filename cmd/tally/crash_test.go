package main

import (
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/xuri/excelize/v2"

	"github.com/tally-dev/tally"
	"github.com/tally-dev/tally/fetch/sim"
	"github.com/tally-dev/tally/internal/testkit/prooftest"
	"github.com/tally-dev/tally/store"
)

// Crashes: a real tally process killed with SIGKILL at random moments, over
// and over, then run to completion. Between kills the database must open
// and hold every window it records fully, with no row outside a recorded
// window; at the end it must hold exactly the truth. A workbook being
// written and killed must never leave a truncated file under its name.

// proofCrash is a sim served with a fixed clock from this process, the
// built binary, and a folder holding the binary's config and database.
type proofCrash struct {
	bin, dir, cfg, db string
	sim               *sim.Server
	from, to          time.Time
	g                 tally.Granularity
	env               []string
}

func proofCrashStart(t *testing.T) *proofCrash {
	t.Helper()
	// The sim's clock stands still and the fetched span ends days before
	// it, so every window's truth is final and the same in every run.
	now := time.Now().UTC().Truncate(time.Hour)
	to := tally.Day.Truncate(now).AddDate(0, 0, -2)
	from := to.AddDate(0, 0, -21)
	c := &proofCrash{bin: tallyBinary(t), dir: t.TempDir(), from: from, to: to, g: tally.Hour}
	c.sim = sim.New(sim.Options{Token: prooftest.Token, Seed: 21, Start: from, Now: func() time.Time { return now },
		PageSize: 400, UsagePaging: true})
	url := prooftest.Serve(t, c.sim)
	c.cfg = filepath.Join(c.dir, "tally.yaml")
	c.db = filepath.Join(c.dir, "tally.duckdb")
	yaml := fmt.Sprintf(`api:
  base_url: %s
  token_env: TALLY_PROOF_TOKEN
  concurrency: 3
  max_retries: 2
usage:
  granularity: hour
  start: %s
  window: 7d
  lookback: 10d
store:
  path: tally.duckdb
reports:
  dir: reports
`, url, from.Format(tally.DateLayout))
	if err := os.WriteFile(c.cfg, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	c.env = append(os.Environ(), "TALLY_PROOF_TOKEN="+prooftest.Token)
	return c
}

// start runs the binary with args, its output discarded.
func (c *proofCrash) start(t *testing.T, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(c.bin, append(args, "--config", c.cfg, "--log-format", "json")...)
	cmd.Env = c.env
	cmd.Dir = c.dir
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd
}

// run runs the binary with args to its end and fails the test unless it
// succeeds.
func (c *proofCrash) run(t *testing.T, args ...string) {
	t.Helper()
	cmd := exec.Command(c.bin, append(args, "--config", c.cfg)...)
	cmd.Env = c.env
	cmd.Dir = c.dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(cmd.Args, " "), err, out)
	}
}

// proofKillAfter kills cmd with SIGKILL after d, unless it ended first, and
// reports whether it was killed.
func proofKillAfter(t *testing.T, cmd *exec.Cmd, d time.Duration) bool {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("%s ended on its own with %v", strings.Join(cmd.Args, " "), err)
		}
		return false
	case <-time.After(d):
	}
	cmd.Process.Signal(syscall.SIGKILL)
	err := <-done
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return true
		}
	}
	if err != nil {
		t.Fatalf("%s: %v", strings.Join(cmd.Args, " "), err)
	}
	return false // it ended just before the signal
}

// consistent checks what a killed run left: the database opens, every
// window in the ledger holds exactly its truth, no row lies outside a
// recorded window, and no window is recorded twice.
func (c *proofCrash) consistent(t *testing.T, label string) (windows int) {
	t.Helper()
	if _, err := os.Stat(c.db); errors.Is(err, os.ErrNotExist) {
		return 0 // killed before the database was created
	}
	prooftest.WithDB(t, c.db, func(db *sql.DB) {
		// A database appears under its name only once created and
		// migrated, whenever the kill fell.
		var tables int
		if err := db.QueryRow(`SELECT count(*) FROM duckdb_tables() WHERE table_name IN ('usage', 'fetch_windows')`).Scan(&tables); err != nil {
			t.Fatalf("%s: %v", label, err)
		}
		if tables != 2 {
			t.Fatalf("%s: the database holds %d of the tables usage and fetch_windows: it was not created whole", label, tables)
		}
		rs, err := db.Query(`SELECT start, "end" FROM fetch_windows ORDER BY start`)
		if err != nil {
			t.Fatalf("%s: read the ledger: %v", label, err)
		}
		var ws []tally.Window
		for rs.Next() {
			w := tally.Window{Granularity: c.g}
			if err := rs.Scan(&w.Start, &w.End); err != nil {
				t.Fatal(err)
			}
			w.Start, w.End = w.Start.UTC(), w.End.UTC()
			ws = append(ws, w)
		}
		rs.Close()
		for _, w := range ws {
			q := tally.UsageQuery{Window: w}
			rows, _ := prooftest.StoredQuery(t, db, q)
			if d := prooftest.FirstDiff(prooftest.RenderAll(rows), prooftest.RenderAll(c.sim.Rows(q))); d != "" {
				t.Errorf("%s: window %s is neither fully old nor fully new: %s", label, w, d)
			}
		}
		windows = len(ws)
		// Every row a committed window holds has the key of its own
		// texts, which focus joins it by.
		var misnumbered int
		if err := db.QueryRow(store.MisnumberedUsage, true).Scan(&misnumbered); err != nil {
			t.Fatalf("%s: %v", label, err)
		}
		if misnumbered != 0 {
			t.Errorf("%s: %d usage rows without the key of their texts", label, misnumbered)
		}
	})
	prooftest.NoDoubles(t, c.db)
	return windows
}

func TestCrashKilledAtRandomMoments(t *testing.T) {
	c := proofCrashStart(t)
	span := []string{"--from", c.from.Format(tally.DateLayout), "--to", c.to.Format(tally.DateLayout)}
	t.Run("fetch", func(t *testing.T) {
		// One whole fetch of the span into a scratch database, to know
		// how long a run takes on this machine now: the kills fall
		// anywhere in such a run, and a busy machine's slower run is
		// covered to its end instead of only its first moments.
		scratch := exec.Command(c.bin, append(append([]string{"fetch"}, span...), "--config", c.cfg)...)
		scratch.Env = append(slices.Clone(c.env), "TALLY_DB="+filepath.Join(t.TempDir(), "tally.duckdb"))
		scratch.Dir = c.dir
		began := time.Now()
		if out, err := scratch.CombinedOutput(); err != nil {
			t.Fatalf("a whole fetch into a scratch database: %v\n%s", err, out)
		}
		whole := max(time.Since(began), 1500*time.Millisecond)
		rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 7))
		// About 12 s of kills; on a slow, busy machine it goes on (up to
		// a minute) until enough kills happened to mean something.
		deadline, hardDeadline := time.Now().Add(12*time.Second), time.Now().Add(time.Minute)
		kills, loaded := 0, 0
		for i := 0; (time.Now().Before(deadline) || kills < 8 || loaded == 0) && time.Now().Before(hardDeadline) && i < 60; i++ {
			// Anywhere in a whole run, where the database is created,
			// windows load and the copy is published; now and then
			// right at the start.
			d := time.Duration(rng.Int64N(int64(whole)))
			if i%5 == 0 {
				d = time.Duration(rng.Int64N(int64(whole / 10)))
			}
			if proofKillAfter(t, c.start(t, append([]string{"fetch"}, span...)...), d) {
				kills++
			}
			if n := c.consistent(t, fmt.Sprintf("after kill %d at %s", i+1, d)); n > 0 {
				loaded++
			}
			if t.Failed() {
				t.FailNow()
			}
		}
		if kills < 8 || loaded == 0 {
			t.Fatalf("%d kills, %d of them after some window was loaded: the loop tested too little", kills, loaded)
		}
		t.Logf("%d fetches killed", kills)
		c.run(t, append([]string{"fetch"}, span...)...)
		prooftest.Exact(t, c.sim, c.db, tally.UsageQuery{Window: tally.Window{Start: c.from, End: c.to, Granularity: c.g}})
	})
	t.Run("report", func(t *testing.T) {
		month := tally.Month.Truncate(c.to.AddDate(0, 0, -1))
		final := filepath.Join(c.dir, "reports", month.Format("2006-01"), "tally-cost-"+month.Format("2006-01")+".xlsx")
		args := []string{"report", "--month", month.Format("2006-01")}

		// One whole run, to know how long writing takes.
		began := time.Now()
		c.run(t, args...)
		full := time.Since(began)
		proofCompleteWorkbook(t, final)

		rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 9))
		deadline, hardDeadline := time.Now().Add(9*time.Second), time.Now().Add(time.Minute)
		kills := 0
		for i := 0; (time.Now().Before(deadline) || kills < 4) && time.Now().Before(hardDeadline) && i < 60; i++ {
			// Every other run starts with no workbook, so a truncated new
			// one cannot hide behind a complete old one.
			if i%2 == 0 {
				if err := os.Remove(final); err != nil && !errors.Is(err, os.ErrNotExist) {
					t.Fatal(err)
				}
			}
			d := time.Duration(rng.Int64N(int64(full + full/4)))
			if proofKillAfter(t, c.start(t, args...), d) {
				kills++
			}
			if _, err := os.Stat(final); err == nil {
				proofCompleteWorkbook(t, final)
			} else if !errors.Is(err, os.ErrNotExist) {
				t.Fatal(err)
			}
			if t.Failed() {
				t.FailNow()
			}
		}
		if kills < 4 {
			t.Fatalf("%d kills: the loop tested too little", kills)
		}
		t.Logf("%d reports killed (a whole report takes %s)", kills, full.Round(time.Millisecond))
	})
}

// proofCompleteWorkbook fails unless path is a whole workbook: excelize
// opens it and finds the Summary and Detail sheets with their rows.
func proofCompleteWorkbook(t *testing.T, path string) {
	t.Helper()
	f, err := excelize.OpenFile(path)
	if err != nil {
		t.Fatalf("%s is not a whole workbook: %v", path, err)
	}
	defer f.Close()
	// The first rows are enough: a workbook is a zip whose directory
	// comes last, so a cut file does not open at all.
	for _, sheet := range []string{"Summary", "Detail"} {
		rows, err := f.Rows(sheet)
		if err != nil {
			t.Fatalf("%s: sheet %s: %v: not a whole workbook", path, sheet, err)
		}
		n := 0
		for n < 2 && rows.Next() {
			n++
		}
		rows.Close()
		if n < 2 {
			t.Fatalf("%s: sheet %s has %d rows: not a whole workbook", path, sheet, n)
		}
	}
}
