package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tally-dev/tally"
	"github.com/tally-dev/tally/fetch/sim"
	"github.com/tally-dev/tally/job"
	"github.com/tally-dev/tally/store"
)

// cliTokenEnv is the environment variable the CLI tests' configs name.
const cliTokenEnv = "TALLY_CLI_TEST_TOKEN"

// cliSimToken is the token of newCLISim's interface.
const cliSimToken = "cli-token-0f3a9c2e71b84d56"

// cliSim is a simulated interface with usage from start, its clock stopped
// at the last whole hour so its truth holds still while the test runs,
// behind a switch that answers 503 to every usage request for the window
// starting on failDay (when set).
type cliSim struct {
	sim     *sim.Server
	url     string
	failDay atomic.Value // string, YYYY-MM-DD
	failed  atomic.Int64
	now     atomic.Int64 // the sim's clock, Unix nanoseconds
}

// advance moves the sim's clock on by d: later nights, with the charges
// processed meanwhile.
func (s *cliSim) advance(d time.Duration) time.Time {
	return time.Unix(0, s.now.Add(int64(d))).UTC()
}

func newCLISim(t *testing.T, start time.Time) *cliSim {
	t.Helper()
	s := &cliSim{}
	s.now.Store(time.Now().UTC().Truncate(time.Hour).UnixNano())
	s.sim = sim.New(sim.Options{Token: cliSimToken, Seed: 9, Start: start, Now: func() time.Time { return time.Unix(0, s.now.Load()).UTC() }})
	s.failDay.Store("")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if day := s.failDay.Load().(string); day != "" && r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/reports/usage") {
			b, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(b))
			var body struct {
				StartDate string `json:"startDate"`
			}
			if json.Unmarshal(b, &body) == nil && body.StartDate == day {
				s.failed.Add(1)
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusServiceUnavailable)
				io.WriteString(w, `{"error":{"code":"ServiceUnavailable","detail":"the service is temporarily unavailable; retry later"}}`)
				return
			}
		}
		s.sim.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	s.url = srv.URL
	return s
}

// cliConfig writes a config against s into a temp folder, exports the
// sim's token in cliTokenEnv and returns the config's and the database's
// paths. No retries: a failing window fails at once.
func cliConfig(t *testing.T, s *cliSim, start time.Time, extra string) (cfg, db string) {
	t.Helper()
	dir := t.TempDir()
	cfg = filepath.Join(dir, "tally.yaml")
	if err := os.WriteFile(cfg, []byte(cliConfigText(s.url, start, extra)), 0o600); err != nil {
		t.Fatal(err)
	}
	setCLIEnv(t, s.sim.Token())
	return cfg, filepath.Join(dir, "tally.duckdb")
}

// setCLIEnv exports token in cliTokenEnv, and no base URL or database
// that would override a config's, for the test.
func setCLIEnv(t *testing.T, token string) {
	t.Helper()
	t.Setenv(cliTokenEnv, token)
	t.Setenv("TALLY_BASE_URL", "")
	t.Setenv("TALLY_DB", "")
}

// cliConfigText is cliConfig's config against the interface at url.
func cliConfigText(url string, start time.Time, extra string) string {
	return fmt.Sprintf(`api:
  base_url: %s
  token_env: %s
  max_retries: 0
  timeout: 20s
usage:
  granularity: day
  start: %s
  window: 7d
  lookback: 1d
store:
  path: tally.duckdb
reports:
  dir: reports
  months: [previous]
schedule:
  lock_wait: 100ms
%s`, url, cliTokenEnv, start.Format(tally.DateLayout), extra)
}

// stderrOf runs fn with os.Stderr redirected and returns what was written
// there: the runner's logs and the error exitCode prints.
func stderrOf(t *testing.T, fn func()) string {
	t.Helper()
	stderr, err := captureStderr(fn)
	if err != nil {
		t.Fatal(err)
	}
	return stderr
}

// captureStderr is stderrOf for a fixture made outside any one test.
func captureStderr(fn func()) (string, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return "", err
	}
	old := os.Stderr
	os.Stderr = w
	done := make(chan []byte)
	go func() {
		b, _ := io.ReadAll(r)
		done <- b
	}()
	defer func() {
		os.Stderr = old
	}()
	fn()
	w.Close()
	os.Stderr = old
	return string(<-done), nil
}

// cli runs the command line in-process and returns its output, its error
// and the exit code main would give, with what went to stderr.
func cli(t *testing.T, args ...string) (out string, code int, stderr string) {
	t.Helper()
	stderr = stderrOf(t, func() {
		var err error
		out, err = execCLI(t, "", args...)
		code = exitCode(err)
	})
	return out, code, stderr
}

func TestFetchExitCodes(t *testing.T) {
	start := tally.Day.Truncate(time.Now().UTC()).AddDate(0, 0, -20)
	s := newCLISim(t, start)
	cfg, db := cliConfig(t, s, start, "")

	t.Run("bad config", func(t *testing.T) {
		bad := filepath.Join(t.TempDir(), "bad.yaml")
		if err := os.WriteFile(bad, []byte("usage:\n  granularity: fortnight\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		_, code, stderr := cli(t, "fetch", "--config", bad)
		if code != job.ExitRefused || !strings.Contains(stderr, "usage.granularity") || !strings.Contains(stderr, "fortnight") {
			t.Fatalf("exit %d, stderr %q; want 2 naming usage.granularity and its value", code, stderr)
		}
	})
	t.Run("from after to", func(t *testing.T) {
		_, code, stderr := cli(t, "fetch", "--config", cfg, "--from", "2025-03-10", "--to", "2025-03-01")
		if code != job.ExitRefused || !strings.Contains(stderr, "--to 2025-03-01 must be after --from 2025-03-10") {
			t.Fatalf("exit %d, stderr %q; want 2", code, stderr)
		}
	})
	t.Run("missing token", func(t *testing.T) {
		t.Setenv(cliTokenEnv, "")
		_, code, stderr := cli(t, "fetch", "--config", cfg)
		if code != job.ExitRefused || !strings.Contains(stderr, cliTokenEnv) {
			t.Fatalf("exit %d, stderr %q; want 2 naming %s", code, stderr, cliTokenEnv)
		}
		if _, err := os.Stat(db); !os.IsNotExist(err) {
			t.Errorf("a usage error created the database: %v", err)
		}
	})
	t.Run("lock held", func(t *testing.T) {
		lock, err := store.AcquireLock(context.Background(), db, "nightly", 0)
		if err != nil {
			t.Fatal(err)
		}
		defer lock.Release()
		began := time.Now()
		_, code, stderr := cli(t, "fetch", "--config", cfg)
		holder := fmt.Sprintf("pid %d", os.Getpid())
		if code != job.ExitFailed || !strings.Contains(stderr, holder) || !strings.Contains(stderr, `"nightly"`) {
			t.Fatalf("exit %d, stderr %q; want 1 naming %s and its command", code, stderr, holder)
		}
		if waited := time.Since(began); waited > 10*time.Second {
			t.Errorf("waited %s for the lock; schedule.lock_wait is 100ms", waited)
		}
		// The wait is said at once, naming the holder, not only when it ends.
		if !strings.Contains(stderr, "waiting for the database lock") || strings.Index(stderr, "waiting for the database lock") > strings.Index(stderr, "run skipped") {
			t.Errorf("stderr %q; want a notice that the run waits for the lock before it gives up", stderr)
		}
	})
	t.Run("window failing every retry, then repaired", func(t *testing.T) {
		bad := start.AddDate(0, 0, 7)
		s.failDay.Store(bad.Format(tally.DateLayout))
		out, code, stderr := cli(t, "fetch", "--config", cfg, "--log-format", "json")
		window := tally.Window{Start: bad, End: bad.AddDate(0, 0, 7), Granularity: tally.Day}.String()
		if code != job.ExitPartial || !strings.Contains(stderr, window) || !strings.Contains(out, "1 failed") {
			t.Fatalf("exit %d; want 3 naming window %s\nstdout:\n%s\nstderr:\n%s", code, window, out, stderr)
		}
		if n := s.failed.Load(); n != 1 {
			t.Errorf("the failing window was asked for %d times; with max_retries 0, once", n)
		}
		if strings.Contains(stderr, s.sim.Token()) || strings.Contains(out, s.sim.Token()) {
			t.Error("the token appears in the output")
		}
		s.failDay.Store("")
		out, code, stderr = cli(t, "fetch", "--config", cfg)
		if code != job.ExitOK || !strings.Contains(out, "0 failed") {
			t.Fatalf("repairing run: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, stderr)
		}
		// The repaired database holds the truth up to the sim's clock.
		to := time.Now().UTC().AddDate(0, 0, 2)
		truth := s.sim.Truth(tally.UsageQuery{Window: tally.Window{Start: start, End: to, Granularity: tally.Day}})
		got, code, _ := cli(t, "query", "--config", cfg, "--format", "csv", "SELECT count(*) AS n FROM usage")
		if want := fmt.Sprintf("n\r\n%d\r\n", truth.Rows); code != job.ExitOK || got != want {
			t.Errorf("rows after the repair: %q (exit %d), want %q", got, code, want)
		}
	})
}

// A wrong port (TALLY_BASE_URL=http://127.0.0.1:1 style) ends the run in
// seconds with exit 1 naming the address: each window tries
// api.connect_retries times more, the references are not read at all, and
// the summary counts every request sent.
func TestFetchWrongPortFailsFast(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "tally.yaml")
	start := tally.Day.Truncate(time.Now().UTC()).AddDate(0, 0, -20).Format(tally.DateLayout)
	text := "api:\n  base_url: http://" + addr + "\n  token_env: " + cliTokenEnv + "\nusage:\n  start: " + start + "\nstore:\n  path: tally.duckdb\n"
	if err := os.WriteFile(cfg, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv(cliTokenEnv, "cli-token-0f3a9c2e71b84d56")
	t.Setenv("TALLY_BASE_URL", "")
	t.Setenv("TALLY_DB", "")
	began := time.Now()
	out, code, stderr := cli(t, "fetch", "--config", cfg, "--log-format", "json")
	took := time.Since(began)
	if code != job.ExitFailed || !strings.Contains(stderr, "cannot reach the interface at http://"+addr) {
		t.Fatalf("exit %d, stderr:\n%s\nwant exit 1 naming http://%s", code, stderr, addr)
	}
	if took > 30*time.Second {
		t.Errorf("a wrong port took %s to fail; the default retries would take minutes, connect_retries seconds", took)
	}
	// A first fetch's first request reads the organization, to name the
	// store's; it fails fast like a window would, and nothing else is sent.
	for _, resource := range []string{"payment methods", "projects:", "locations:", "reading reference data"} {
		if strings.Contains(stderr, resource) {
			t.Errorf("the references were read after the interface could not be reached (%q in the log)", resource)
		}
	}
	// One request, the default api.connect_retries of 3: four requests.
	if retries := strings.Count(stderr, `"message":"retrying"`); retries != 3 {
		t.Errorf("%d retries, want api.connect_retries = 3", retries)
	}
	if !strings.Contains(out, "requests: 4 ") {
		t.Errorf("summary %q does not count the 4 requests sent", out)
	}
}

// jwtToken is a JWT-shaped token whose exp claim is exp, with a subject
// claim that must never appear in a log.
func jwtToken(exp time.Time, sub string) string {
	enc := base64.RawURLEncoding.EncodeToString
	return enc([]byte(`{"alg":"RS256","typ":"JWT"}`)) + "." +
		enc([]byte(fmt.Sprintf(`{"sub":%q,"org":"o-1","exp":%d}`, sub, exp.Unix()))) + "." + enc([]byte("sig-0f3a9c2e71b84d56"))
}

// A token's expiry (a JWT's exp) is read without verifying it: an expired
// one stops the run before any request, exit 2, naming the date and how to
// renew; one expiring within api.token_warn_before is warned about on the
// run; neither the token nor its other claims ever reach the log.
func TestTokenExpiry(t *testing.T) {
	start := tally.Day.Truncate(time.Now().UTC()).AddDate(0, 0, -5)
	for _, c := range []struct {
		name    string
		exp     time.Time
		code    int
		message string
	}{
		{"expired", time.Now().UTC().Add(-time.Hour).Truncate(time.Second), job.ExitRefused, "the API token expired on "},
		{"expiring in five days", time.Now().UTC().AddDate(0, 0, 5).Truncate(time.Second), job.ExitOK, "the API token expires soon"},
	} {
		t.Run(c.name, func(t *testing.T) {
			token := jwtToken(c.exp, "alice@example.com")
			s := &cliSim{}
			s.now.Store(time.Now().UTC().Truncate(time.Hour).UnixNano())
			s.sim = sim.New(sim.Options{Token: token, Seed: 9, Start: start, Now: func() time.Time { return time.Unix(0, s.now.Load()).UTC() }})
			s.failDay.Store("")
			srv := httptest.NewServer(s.sim)
			t.Cleanup(srv.Close)
			s.url = srv.URL
			cfg, _ := cliConfig(t, s, start, "")
			_, code, stderr := cli(t, "fetch", "--config", cfg, "--log-format", "json")
			if code != c.code || !strings.Contains(stderr, c.message) {
				t.Fatalf("exit %d, stderr:\n%s\nwant exit %d saying %q", code, stderr, c.code, c.message)
			}
			if c.code == job.ExitRefused {
				if n := s.sim.Requests(); n != 0 {
					t.Errorf("%d requests were sent with an expired token", n)
				}
				if !strings.Contains(stderr, c.exp.Format(time.RFC3339)) || !strings.Contains(stderr, "create a new personal API token") {
					t.Errorf("stderr %q does not name the date and how to renew", stderr)
				}
			}
			for _, secret := range []string{token, "alice@example.com", strings.Split(token, ".")[1]} {
				if strings.Contains(stderr, secret) {
					t.Errorf("the log carries the token or its claims (%q)", secret)
				}
			}
		})
	}
}

// TestFetchTellsOfAnUpgradesFill: after an upgrade whose migration empties
// a table the load keeps and lists it to fill (kept_refills), the next run
// fills it a month at a time and logs each month, so an operator watching a
// store of years open for minutes sees it work; the table is whole after.
func TestFetchTellsOfAnUpgradesFill(t *testing.T) {
	start := tally.Day.Truncate(time.Now().UTC()).AddDate(0, 0, -40)
	s := newCLISim(t, start)
	cfg, db := cliConfig(t, s, start, "")
	if _, code, stderr := cli(t, "fetch", "--config", cfg); code != 0 {
		t.Fatalf("first fetch: exit %d: %s", code, stderr)
	}
	conn, err := sql.Open("duckdb", db)
	if err != nil {
		t.Fatal(err)
	}
	var want int
	if err := conn.QueryRow(`SELECT count(*) FROM daily_usage_cost`).Scan(&want); err != nil || want == 0 {
		t.Fatalf("daily_usage_cost after the first fetch: %d rows, %v", want, err)
	}
	var months []string
	rows, err := conn.Query(`SELECT DISTINCT strftime(date, '%Y-%m') FROM usage WHERE basis = 'usage' ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var m string
		if err := rows.Scan(&m); err != nil {
			t.Fatal(err)
		}
		months = append(months, m)
	}
	rows.Close()
	if len(months) < 2 {
		t.Fatalf("the fixture's usage spans %v: want two months or more", months)
	}
	var keyMonths int
	if err := conn.QueryRow(`SELECT count(DISTINCT (organization, date_trunc('month', date))) FROM usage`).Scan(&keyMonths); err != nil {
		t.Fatal(err)
	}
	// What a migration that reshapes the table does, in one transaction;
	// and the usage rows as a store from before usage keys has them.
	if _, err := conn.Exec(`BEGIN; DELETE FROM daily_usage_cost; INSERT INTO kept_refills (kept, done_before) VALUES ('daily_usage_cost', NULL);
UPDATE usage SET key_id = NULL; DELETE FROM usage_keys; COMMIT`); err != nil {
		t.Fatal(err)
	}
	conn.Close()

	_, code, stderr := cli(t, "fetch", "--config", cfg)
	if code != 0 {
		t.Fatalf("fetch after the upgrade: exit %d: %s", code, stderr)
	}
	var told []string
	for _, line := range strings.Split(stderr, "\n") {
		if strings.Contains(line, "filling a table the load keeps") && strings.Contains(line, `"table":"daily_usage_cost"`) {
			told = append(told, line)
		}
	}
	if len(told) != len(months) {
		t.Fatalf("the fill logged %d months, want %d (%v):\n%s", len(told), len(months), months, stderr)
	}
	if n := strings.Count(stderr, "numbering the usage rows' keys"); n != keyMonths {
		t.Errorf("the numbering of usage keys logged %d months, want %d:\n%s", n, keyMonths, stderr)
	}
	for i, line := range told {
		if !strings.Contains(line, fmt.Sprintf(`"month":"%s"`, months[i])) || !strings.Contains(line, fmt.Sprintf(`"done":%d,"months":%d`, i+1, len(months))) {
			t.Errorf("fill line %d, want month %s (%d of %d): %s", i, months[i], i+1, len(months), line)
		}
	}
	conn, err = sql.Open("duckdb", db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var got, listed int
	if err := conn.QueryRow(`SELECT (SELECT count(*) FROM daily_usage_cost), (SELECT count(*) FROM kept_refills)`).Scan(&got, &listed); err != nil {
		t.Fatal(err)
	}
	if got < want || listed != 0 {
		t.Fatalf("after the fill: daily_usage_cost %d rows (had %d), %d tables still listed", got, want, listed)
	}
	var unkeyed, focusRows int
	if err := conn.QueryRow(`SELECT (SELECT count(*) FROM usage WHERE key_id IS NULL), (SELECT count(*) FROM focus)`).Scan(&unkeyed, &focusRows); err != nil {
		t.Fatal(err)
	}
	if unkeyed != 0 || focusRows == 0 {
		t.Fatalf("after the upgrade: %d usage rows without a key, %d focus rows", unkeyed, focusRows)
	}
}
