package store

import (
	"context"
	"database/sql"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tally-dev/tally"
)

// On a machine whose time zone is not UTC, a month's bounds passed as
// time.Time still keep every row in its own month: each connection works
// in UTC. DuckDB takes the machine's zone once per process, so the check
// runs in a child process of this test binary, under two zones either side
// of UTC.
func TestTimesAreUTCOnAnyMachine(t *testing.T) {
	if os.Getenv("TALLY_TZ_CHILD") != "" {
		utcOnAnyMachine(t)
		return
	}
	for _, tz := range []string{"America/New_York", "Pacific/Kiritimati"} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestTimesAreUTCOnAnyMachine$", "-test.count=1", "-test.v")
		cmd.Env = append(os.Environ(), "TZ="+tz, "TALLY_TZ_CHILD=1")
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "--- PASS: TestTimesAreUTCOnAnyMachine") {
			t.Fatalf("TZ=%s: %v\n%s", tz, err, out)
		}
	}
}

func utcOnAnyMachine(t *testing.T) {
	ctx := context.Background()
	// The child must really run in another zone, or it proves nothing.
	raw, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	var zone string
	if err := raw.QueryRowContext(ctx, "SELECT current_setting('TimeZone')").Scan(&zone); err != nil {
		t.Fatal(err)
	}
	if zone == "UTC" || zone == "Etc/UTC" {
		t.Fatalf("DuckDB's default time zone is %s with TZ=%s: the check needs another", zone, os.Getenv("TZ"))
	}

	s, err := Open(ctx, filepath.Join(t.TempDir(), "tally.duckdb"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	q := tally.UsageQuery{Window: window(t, tally.Day, "2026-09-01", "2026-12-01")}
	load(t, s, q, row(date(t, "2026-09-30"), "m", "p", "1"), row(date(t, "2026-10-01"), "m", "p", "2"),
		row(date(t, "2026-10-31"), "m", "p", "4"), row(date(t, "2026-11-01"), "m", "p", "8"))
	oct, nov := date(t, "2026-10-01"), date(t, "2026-11-01")
	if got := rowsText(t, s, `SELECT sum(cost), CAST(CAST(? AS DATE) AS VARCHAR) FROM usage WHERE date >= ? AND date < ?`, oct, oct, nov); len(got) != 1 || got[0] != "6.000000000000|2026-10-01" {
		t.Errorf("October's rows under TZ=%s (DuckDB default %s): %v, want the 1st and the 31st, 6", os.Getenv("TZ"), zone, got)
	}
	s.Close()
	ro, err := Open(ctx, s.path, Query(QueryLimits{}))
	if err == nil {
		defer ro.Close()
		err = ro.db.QueryRowContext(ctx, "SELECT current_setting('TimeZone')").Scan(&zone)
	}
	if err != nil || zone != "UTC" {
		t.Errorf("an analyst's connection works in %q (%v), want UTC", zone, err)
	}
}
