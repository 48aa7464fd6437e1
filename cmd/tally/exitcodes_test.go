package main

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tally-dev/tally/fetch/sim"
	"github.com/tally-dev/tally/job"
	"github.com/tally-dev/tally/reports"
	"github.com/tally-dev/tally/store"
)

// exitNow is "today" for the exit-code tests: 5 November 2026, noon UTC,
// so October is over, its close_after of 1d has passed, and the data do
// not depend on the day the test runs.
var exitNow = time.Date(2026, 11, 5, 12, 0, 0, 0, time.UTC)

// exitOctober is a config against a simulated interface with usage from 1
// October 2026, "today" exitNow, and its database; fetched, when asked,
// through tally fetch.
func exitOctober(t *testing.T, fetched bool) (cfg, db string) {
	t.Helper()
	setPlanClock(t, exitNow)
	october := time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC)
	s := newCLISim(t, october)
	s.now.Store(exitNow.UnixNano())
	cfg, db = cliConfig(t, s, october, "")
	if !fetched {
		return cfg, db
	}
	if _, code, stderr := cli(t, "fetch", "--config", cfg); code != job.ExitOK {
		t.Fatalf("fetch: exit %d\n%s", code, stderr)
	}
	return cfg, db
}

// TestRunPartlyFetchedStillDeliversAndListsEveryFailure: two
// organizations, us answered 401 (a wrong token), reports.close_after
// passed and a webhook that refuses every alert. The close step cannot
// close October (us is not loaded), which the fetch's partial failure
// caused: the run is partial (exit 3), not refused, and the steps after
// the close (deliver, export, alerts) still run. The run's error, as
// printed, in runs.error and in tally status, lists every failure: the
// 401 of us, the close not done and the alerts not sent.
func TestRunPartlyFetchedStillDeliversAndListsEveryFailure(t *testing.T) {
	setPlanClock(t, exitNow)
	clock := func() time.Time { return exitNow }
	october := time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC)
	emea := sim.New(sim.Options{Token: "tok-emea-3b9e1c7d04a2f865", Seed: 31, Start: october, Now: clock, OrgName: "EMEA Media", Currency: "EUR"})
	us := sim.New(sim.Options{Token: "tok-us-8d2f6a1c9e3b4705", Seed: 32, Start: october, Now: clock, OrgName: "US Media", Currency: "USD"})
	group, err := sim.NewGroup(emea, us)
	if err != nil {
		t.Fatal(err)
	}
	api := httptest.NewServer(group)
	defer api.Close()
	var posts atomic.Int64
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		posts.Add(1)
		http.Error(w, "refused", http.StatusBadRequest)
	}))
	defer hook.Close()
	t.Setenv("TALLY_TEST_TOKEN_EMEA", emea.Token())
	t.Setenv("TALLY_TEST_TOKEN_US", "tok-us-revoked-000000000000")
	t.Setenv("TALLY_BASE_URL", "")
	t.Setenv("TALLY_DB", "")
	dir := t.TempDir()
	cfg := filepath.Join(dir, "tally.yaml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(`api:
  base_url: %s
  max_retries: 0
  timeout: 20s
organizations:
  - name: emea
    token_env: TALLY_TEST_TOKEN_EMEA
  - name: us
    token_env: TALLY_TEST_TOKEN_US
usage:
  granularity: day
  start: 2026-10-01
  lookback: 1d
store:
  path: tally.duckdb
reports:
  dir: reports
  months: [previous]
  close_after: 1d
  deliver:
    dir: deliver
export:
  dir: exports
budgets:
  - {name: emea-cap, scope: "organization:emea", currency: EUR, amount: 1, actual: [100], forecast: []}
alerts:
  webhook: {url: "%s/t7c1-alerts", timeout: 5s}
schedule:
  lock_wait: 100ms
  jobs:
    - name: nightly
      cron: "@daily"
      run: [fetch, report, close, deliver, export, alerts]
`, api.URL, hook.URL)), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "deliver"), 0o750); err != nil {
		t.Fatal(err)
	}

	out, code, stderr := cli(t, "run", "--config", cfg)
	if code != job.ExitPartial {
		t.Fatalf("run with us refused and the close not possible: exit %d, want %d (partial)\nstdout:\n%s\nstderr:\n%s", code, job.ExitPartial, out, stderr)
	}
	every := []string{
		"organization us not fetched", "401",
		"step close did not do its part", "--month 2026-10 is not fully loaded for organization us",
		"alert(s) not sent to webhook:",
	}
	// The error exitCode prints is the last thing on stderr.
	last := stderr[strings.LastIndex(stderr, "tally: "):]
	for _, want := range every {
		if !strings.Contains(last, want) {
			t.Errorf("the run's error does not say %q:\n%s", want, last)
		}
	}
	// us's window is named once, in us's own failure.
	if n := strings.Count(last, "fetch usage 2026-10-01..2026-11-06"); n != 1 {
		t.Errorf("us's failed window is listed %d times, want once:\n%s", n, last)
	}
	if posts.Load() == 0 {
		t.Error("no alert was posted: the webhook's refusal is not tested")
	}
	// The steps after the close ran: the group's and emea's October
	// workbooks delivered, the export written.
	for _, org := range []string{"", "emea"} {
		book := reports.DefaultPath(filepath.Join(dir, "reports"), october)
		if org != "" {
			book = reports.OrgPath(filepath.Join(dir, "reports"), october, org)
		}
		if _, err := os.Stat(filepath.Join(dir, "deliver", org, filepath.Base(book))); err != nil {
			t.Errorf("the deliver step after the refused close did not deliver %s: %v", filepath.Base(book), err)
		}
	}
	if m, _ := filepath.Glob(filepath.Join(dir, "exports", "usage", "*", "*.parquet")); len(m) == 0 {
		t.Error("the export step after the refused close wrote no usage Parquet")
	}
	if n := scalarText(t, filepath.Join(dir, "tally.duckdb"), `SELECT count(*) FROM month_closes`); n != "0" {
		t.Errorf("%s closes recorded; October is not fully loaded", n)
	}
	// The run's row, and tally status reading it, list every failure.
	runErr := scalarText(t, filepath.Join(dir, "tally.duckdb"), `SELECT status || ': ' || error FROM runs WHERE command = 'run'`)
	status, code, serr := cli(t, "status", "--config", cfg)
	if code != job.ExitOK {
		t.Fatalf("status: exit %d\n%s", code, serr)
	}
	if !strings.HasPrefix(runErr, "partial: ") {
		t.Errorf("runs: %q, want the run partial", runErr)
	}
	for _, want := range every {
		if !strings.Contains(runErr, want) {
			t.Errorf("runs.error does not say %q:\n%s", want, runErr)
		}
		if !strings.Contains(status, want) {
			t.Errorf("tally status does not say %q:\n%s", want, status)
		}
	}
}

// TestReportOfAMonthNeverLoaded: a report is refused (exit 2, nothing
// written) before any fetch, for a month never loaded and at a basis the
// config does not load, each time saying what to do.
func TestReportOfAMonthNeverLoaded(t *testing.T) {
	cfg, _ := exitOctober(t, false)
	out := filepath.Join(t.TempDir(), "book.xlsx")
	refused := func(label string, args []string, says ...string) {
		t.Helper()
		_, code, stderr := cli(t, append([]string{"report", "--config", cfg, "--out", out}, args...)...)
		if code != job.ExitRefused {
			t.Errorf("%s: exit %d, want %d (refused, nothing written)\n%s", label, code, job.ExitRefused, stderr)
		}
		for _, want := range says {
			if !strings.Contains(stderr, want) {
				t.Errorf("%s: the error does not say %q:\n%s", label, want, stderr)
			}
		}
		if _, err := os.Stat(out); !os.IsNotExist(err) {
			t.Errorf("%s: a workbook was written: %v", label, err)
		}
	}
	refused("before any fetch", []string{"--month", "2026-10"}, "nothing was loaded yet", "tally fetch --config "+cfg)
	if _, code, stderr := cli(t, "fetch", "--config", cfg); code != job.ExitOK {
		t.Fatalf("fetch: exit %d\n%s", code, stderr)
	}
	refused("a month never loaded", []string{"--month", "2025-01"}, "2025-01 was never loaded",
		"tally fetch --config "+cfg+" --from 2025-01-01 --to 2025-02-01")
	refused("basis reported, not loaded by this config", []string{"--month", "2026-10", "--basis", "reported"},
		"usage.reported_date: true", "tally fetch --config "+cfg+" --from 2026-10-01 --to 2026-11-01")
	if _, code, stderr := cli(t, "report", "--config", cfg, "--month", "2026-10", "--out", out); code != job.ExitOK {
		t.Fatalf("report of October: exit %d\n%s", code, stderr)
	}
}

// TestCloseWhoseCopyIsNotPublished: the analysts' copy cannot be
// published after a close (here its place is taken by a folder, which no
// rename replaces, as a full disk would fail it). The close stands and
// says so, exit 3, naming the copy; rerunning the close publishes the copy
// rather than refusing an already closed month, after which tally status
// shows the month closed.
func TestCloseWhoseCopyIsNotPublished(t *testing.T) {
	cfg, db := exitOctober(t, true)
	october := time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC)
	pub := store.PublishedPath(db)
	before, err := os.ReadFile(pub)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(pub); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(pub, "in-the-way"), 0o750); err != nil {
		t.Fatal(err)
	}
	out, code, stderr := cli(t, "close", "--config", cfg, "--month", "2026-10", "--reason", "signed off")
	last := stderr[strings.LastIndex(stderr, "tally: "):]
	if code != job.ExitPartial || !strings.Contains(out, "closed 2026-10") ||
		!strings.Contains(last, "the month is closed and recorded") || !strings.Contains(last, "analysts' copy "+pub+" is not published") {
		t.Fatalf("close with the copy not published: exit %d, want %d saying the month is closed and the copy not published\nstdout:\n%s\nerror:\n%s", code, job.ExitPartial, out, last)
	}
	final := reports.FinalPath(filepath.Join(filepath.Dir(db), "reports"), october, "", 1)
	if _, err := os.Stat(final); err != nil {
		t.Fatalf("the final workbook: %v", err)
	}
	if got := scalarText(t, db, `SELECT status || ': ' || error FROM runs WHERE command = 'close'`); !strings.HasPrefix(got, "partial: ") || !strings.Contains(got, "not published") {
		t.Errorf("the close's run: %q, want partial naming the copy", got)
	}
	// The copy as it was (a reader's view of a failed publish): October open.
	if err := os.RemoveAll(pub); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(pub, before, 0o600); err != nil {
		t.Fatal(err)
	}
	out, code, stderr = cli(t, "close", "--config", cfg, "--month", "2026-10", "--reason", "signed off")
	if code != job.ExitOK || !strings.Contains(out, "2026-10 was already closed") || !strings.Contains(out, "analysts' copy: "+pub) {
		t.Fatalf("close again: exit %d, want 0 publishing the copy\nstdout:\n%s\nstderr:\n%s", code, out, stderr)
	}
	if n := scalarText(t, db, `SELECT count(*) FROM month_closes`); n != "1" {
		t.Errorf("%s closes recorded, want the one", n)
	}
	status, code, stderr := cli(t, "status", "--config", cfg, "--format", "json")
	if code != job.ExitOK || !regexp.MustCompile(`"month":\s*"2026-10"`).MatchString(status) {
		t.Errorf("status after the copy is published: exit %d, want October closed\n%s\n%s", code, status, stderr)
	}
}

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
	if code != job.ExitFailed {
		t.Fatalf("fetch of one hostile window: exit %d, want %d (failed, nothing loaded):\n%s", code, job.ExitFailed, msg)
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

// TestCloseWhoseFinalIsNotPlaced: the close is recorded but its final
// workbook cannot be renamed into place (a folder stands at its name): the
// month is closed, so the close is partial (exit 3), not failed, and says
// the file is not in place; closing again, once the way is clear, puts it
// there rather than refusing a closed month.
func TestCloseWhoseFinalIsNotPlaced(t *testing.T) {
	cfg, db := exitOctober(t, true)
	october := time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC)
	final := reports.FinalPath(filepath.Join(filepath.Dir(db), "reports"), october, "", 1)
	if err := os.MkdirAll(filepath.Join(final, "in-the-way"), 0o750); err != nil {
		t.Fatal(err)
	}
	out, code, stderr := cli(t, "close", "--config", cfg, "--month", "2026-10", "--reason", "signed off")
	last := stderr[strings.LastIndex(stderr, "tally: "):]
	if code != job.ExitPartial || !strings.Contains(out, "closed 2026-10") || !strings.Contains(last, "the month is closed and recorded") ||
		!strings.Contains(last, "the final workbook "+final+" is not in place yet") {
		t.Fatalf("close with the final's place taken: exit %d, want %d saying the month is closed and the file not in place\nstdout:\n%s\nerror:\n%s", code, job.ExitPartial, out, last)
	}
	if got := scalarText(t, db, `SELECT status FROM runs WHERE command = 'close'`); got != "partial" {
		t.Errorf("the close's run is %s, want partial", got)
	}
	if err := os.RemoveAll(final); err != nil {
		t.Fatal(err)
	}
	out, code, stderr = cli(t, "close", "--config", cfg, "--month", "2026-10", "--reason", "signed off")
	if code != job.ExitOK || !strings.Contains(out, "final workbook: "+final) {
		t.Fatalf("close again: exit %d, want 0 putting the final in place\nstdout:\n%s\nstderr:\n%s", code, out, stderr)
	}
	if fi, err := os.Stat(final); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("the final workbook after closing again: %v", err)
	}
	if n := scalarText(t, db, `SELECT count(*) FROM month_closes`); n != "1" {
		t.Errorf("%s closes recorded, want the one", n)
	}
}
