package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tally-dev/tally/fetch/sim"
)

// exitNow is "today" for the exit-code tests: 5 November 2026, noon UTC,
// so October is over, its close_after of 1d has passed, and the data do
// not depend on the day the test runs.
var exitNow = time.Date(2026, 11, 5, 12, 0, 0, 0, time.UTC)

// TestHostileAnswerToTheOnlyWindow: a fetch of one window whose answer is
// hostile (a project name that is not UTF-8) loaded nothing: it failed,
// exit 1, listing the window and what was wrong, and the store holds no
// usage. (With other windows loaded the same answer makes the run partial,
// exit 3: TestHostileBodiesExitAsREADMESays.) docs/guarantees.md states
// the rule.
func TestHostileAnswerToTheOnlyWindow(t *testing.T) {
	setPlanClock(t, exitNow)
	start := exitNow.AddDate(0, 0, -3).Truncate(24 * time.Hour)
	s := sim.New(sim.Options{Token: badToken, Seed: 4, Start: start, Now: func() time.Time { return exitNow }})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasSuffix(r.URL.Path, "/reports/usage") {
			s.ServeHTTP(w, r)
			return
		}
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, r)
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(strings.Replace(rec.Body.String(), `"project":"`, "\"project\":\"alpha\xff\xfe-", 1)))
	}))
	defer srv.Close()
	dir := t.TempDir()
	db := filepath.Join(dir, "tally.duckdb")
	cfg := writeBadConfig(t, dir, "tally.yaml", fmt.Sprintf(
		"api:\n  base_url: %s\n  max_retries: 0\nusage:\n  granularity: day\n  start: %s\n  window: 7d\nstore:\n  path: tally.duckdb\n",
		srv.URL, start.Format("2006-01-02")))
	t.Setenv("TALLY_API_TOKEN", badToken)
	t.Setenv("TALLY_DB", "")
	t.Setenv("TALLY_BASE_URL", "")
	code, msg := badCLI(t, "fetch", "--config", cfg)
	if code != exitFailed {
		t.Fatalf("fetch of one hostile window: exit %d, want %d (failed, nothing loaded):\n%s", code, exitFailed, msg)
	}
	for _, want := range []string{"every window of the fetch (1) failed after all retries, so no usage was loaded", start.Format("2006-01-02"), "is not valid UTF-8"} {
		if !strings.Contains(msg, want) {
			t.Errorf("the error does not say %q:\n%.3000s", want, msg)
		}
	}
	if n := scalarText(t, db, `SELECT count(*) FROM usage`); n != "0" {
		t.Errorf("%s usage rows stored by a fetch whose only window failed", n)
	}
	if got := scalarText(t, db, `SELECT status FROM runs`); got != "failed" {
		t.Errorf("run %s, want failed", got)
	}
}
