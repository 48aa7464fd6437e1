package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tally-dev/tally"
	"github.com/tally-dev/tally/job"
)

// The interface's data stops on 20 October; the nightly run is replayed
// as of 27 October, twice, after fetching through that day. Tally says so
// everywhere: status prints a STALE line naming the organization and the
// day (exit 0), the run records the warning, one alert goes to the
// webhook across both runs, the Budgets sheet and status name 20 October
// as the last day with data, complete, with the fetched empty days after
// it, and the scheduler's /healthz answers 503 and its metrics carry the
// newest day's age.
func TestStaleDataIsToldEverywhere(t *testing.T) {
	start := time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC)
	stop := time.Date(2026, 10, 21, 0, 0, 0, 0, time.UTC) // the interface's clock: its last hours are on 20 October
	asOf := "2026-10-27"
	s := newCLISim(t, start)
	s.now.Store(stop.UnixNano())

	var mu sync.Mutex
	var kinds []string
	var stale []map[string]any
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var body map[string]any
		if json.Unmarshal(b, &body) == nil {
			mu.Lock()
			kinds = append(kinds, fmt.Sprint(body["kind"]))
			if body["kind"] == "stale" {
				stale = append(stale, body)
			}
			mu.Unlock()
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(hook.Close)
	t.Setenv("FRESH_HOOK_SECRET", "fresh-hook-secret-5d1c")

	dir := t.TempDir()
	cfg := filepath.Join(dir, "tally.yaml")
	yml := fmt.Sprintf(`api:
  base_url: %s
  token_env: %s
  max_retries: 0
usage:
  granularity: day
  start: %s
  window: 7d
  lookback: 1d
store:
  path: tally.duckdb
reports:
  dir: reports
  months: [current]
budgets:
  - {name: all-usd, scope: all, currency: USD, amount: 1000000, actual: [100], forecast: [100]}
alerts:
  webhook: {url: "%s/hook", secret_env: FRESH_HOOK_SECRET, timeout: 5s}
schedule:
  lock_wait: 100ms
  jobs:
    - {name: yearly, cron: "CRON_TZ=UTC 0 0 1 1 *", run: [fetch, report]}
`, s.url, cliTokenEnv, start.Format(tally.DateLayout), hook.URL)
	if err := os.WriteFile(cfg, []byte(yml), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv(cliTokenEnv, s.sim.Token())
	t.Setenv("TALLY_BASE_URL", "")
	t.Setenv("TALLY_DB", "")
	db := filepath.Join(dir, "tally.duckdb")

	for i := 1; i <= 2; i++ {
		out, code, stderr := cli(t, "run", "--config", cfg, "--as-of", asOf, "--job", "yearly")
		if code != job.ExitOK {
			t.Fatalf("run %d: exit %d, want 0 (stale data is a warning)\n%s\n%s", i, code, out, stderr)
		}
		if !strings.Contains(stderr, "STALE: usage of organization ") || !strings.Contains(stderr, "stops on 2026-10-20") {
			t.Errorf("run %d logged no STALE warning naming 2026-10-20:\n%s", i, stderr)
		}
	}
	// The ledger holds the empty days: fetched through the replayed day.
	if got := scalarText(t, db, `SELECT CAST(max("end") AS VARCHAR) FROM fetch_windows`); got != "2026-10-28" {
		t.Fatalf("ledger ends %s, want 2026-10-28 (fetched through the as-of day)", got)
	}
	org := scalarText(t, db, "SELECT name FROM organizations")
	if org == "" {
		t.Fatal("no organization stored")
	}
	warnings := scalarText(t, db, "SELECT warnings FROM runs ORDER BY started DESC LIMIT 1")
	if want := "STALE: usage of organization " + org + " stops on 2026-10-20: its newest day holding usage is 7 days old, though fetched through 2026-10-27 (usage.stale_after 2d)"; !strings.Contains(warnings, want) {
		t.Errorf("runs.warnings = %q, want it to hold %q", warnings, want)
	}

	// One alert for the episode across both runs, naming the organization
	// and the day.
	mu.Lock()
	if len(stale) != 1 {
		t.Errorf("the webhook received %d stale alerts (all kinds: %v), want exactly 1", len(stale), kinds)
	} else if stale[0]["organization"] != org || stale[0]["newest_usage_day"] != "2026-10-20" || !strings.Contains(fmt.Sprint(stale[0]["text"]), "stops on 2026-10-20") {
		t.Errorf("stale alert %v; want organization %s and day 2026-10-20", stale[0], org)
	}
	mu.Unlock()

	// status: the STALE line, exit 0, the same in JSON; the budget's
	// through label names the last day with data, complete, and the days
	// fetched empty after it up to the replayed day's eve: as of its
	// morning, the replayed day itself is not yet data.
	out, code, stderr := cli(t, "status", "--config", cfg, "--as-of", asOf)
	if code != job.ExitOK {
		t.Fatalf("status: exit %d, want 0\n%s\n%s", code, out, stderr)
	}
	for _, want := range []string{
		"STALE: usage of organization " + org + " stops on 2026-10-20",
		"2026-10-20 (complete; none on 2026-10-21 to 2026-10-26, fetched)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("status does not say %q:\n%s", want, out)
		}
	}
	out, code, _ = cli(t, "status", "--config", cfg, "--as-of", asOf, "--format", "json")
	var st struct {
		Usage []struct {
			Organization string `json:"organization"`
			Newest       string `json:"newest_usage_day"`
			Age          int    `json:"age_days"`
			Stale        bool   `json:"stale"`
		} `json:"usage_freshness"`
		Stale   []string `json:"stale"`
		Budgets []struct {
			Through     string `json:"through"`
			ThroughText string `json:"through_text"`
		} `json:"budgets"`
	}
	if err := json.Unmarshal([]byte(out), &st); err != nil || code != job.ExitOK {
		t.Fatalf("status json: exit %d, %v", code, err)
	}
	if len(st.Usage) != 1 || st.Usage[0].Organization != org || !strings.HasPrefix(st.Usage[0].Newest, "2026-10-20") || st.Usage[0].Age != 7 || !st.Usage[0].Stale || len(st.Stale) != 1 {
		t.Errorf("status json freshness %+v, stale %q", st.Usage, st.Stale)
	}
	if len(st.Budgets) != 1 || st.Budgets[0].Through != "2026-10-20" {
		t.Errorf("status json budgets %+v; want through 2026-10-20", st.Budgets)
	}
	// As of the day after the data stopped, nothing is stale yet.
	// (The latest run's warnings still say what that run found.)
	out, _, _ = cli(t, "status", "--config", cfg, "--as-of", "2026-10-22")
	if _, fresh, _ := strings.Cut(out, "\nFRESHNESS\n"); strings.Contains(fresh, "STALE") || !strings.Contains(fresh, "newest day     2026-10-20 (2 days old as of 2026-10-22; stale after 2d)") {
		t.Errorf("status as of 2026-10-22 (2 days):\n%s", out)
	}

	// The month's workbook: the forecast counts the fetched empty days as
	// actual days of no cost, and the sheet names the last day with data.
	rows := sheetRows(t, filepath.Join(dir, "reports", "2026-10", "tally-cost-2026-10.xlsx"), "Budgets and forecast")
	sheet := fmt.Sprint(rows)
	for _, want := range []string{"Data through (complete)", "2026-10-20", "The days from 2026-10-21 to 2026-10-26 were fetched and held no usage"} {
		if !strings.Contains(sheet, want) {
			t.Errorf("Budgets sheet does not say %q:\n%s", want, sheet)
		}
	}
	if strings.Contains(sheet, "partial") {
		t.Errorf("Budgets sheet calls a week-old day partial:\n%s", sheet)
	}
	if n := scalarText(t, db, `SELECT CAST(count(*) AS VARCHAR) FROM forecast_days WHERE scope_kind = 'all' AND currency = 'USD' AND kind = 'forecast' AND day <= DATE '2026-10-26'`); n != "0" {
		t.Errorf("%s fetched days without usage are forecast as days still to come", n)
	}

	// The scheduler: /healthz 503 naming the reason, and the age gauge.
	bin := tallyBinary(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	prom := filepath.Join(dir, "tally.prom")
	p := schedStartProc(t, bin, "schedule", "--config", cfg, "--health-addr", addr, "--metrics-file", prom)
	var code503 int
	var health string
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		resp, err := http.Get("http://" + addr + "/healthz")
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			code503, health = resp.StatusCode, string(b)
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if code503 != http.StatusServiceUnavailable || !strings.Contains(health, "STALE: usage of organization "+org+" stops on 2026-10-20") {
		t.Errorf("/healthz: %d\n%s\nstderr:\n%s", code503, health, p.stderr.String())
	}
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	want := fmt.Sprintf(`tally_usage_newest_day_age_seconds{organization=%q}`, org)
	if !strings.Contains(string(metrics), want) {
		t.Errorf("/metrics has no %s:\n%s", want, metrics)
	}
	p.cmd.Process.Signal(os.Interrupt)
	p.wait(t, 30*time.Second)
	if b, err := os.ReadFile(prom); err != nil || !strings.Contains(string(b), want) {
		t.Errorf("metrics file %s: %v; want %s", prom, err, want)
	}
}
