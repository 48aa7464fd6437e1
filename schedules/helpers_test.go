package schedules

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/xuri/excelize/v2"

	"github.com/tally-dev/tally"
	"github.com/tally-dev/tally/configs"
	"github.com/tally-dev/tally/export"
	"github.com/tally-dev/tally/fetch"
	"github.com/tally-dev/tally/fetch/sim"
	"github.com/tally-dev/tally/internal/prooftest"
	"github.com/tally-dev/tally/internal/secret"
	"github.com/tally-dev/tally/job"
	"github.com/tally-dev/tally/store"
)

// testToken is the bearer token of every test; tests check it never lands
// in logs, database files or workbooks.
const testToken = "tok-5e3c1a9f07d24b68b1e0c4a7d92f36e8"

// clock is the one clock of a test: the sim's and the runner's.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}

// fastRetry retries as often as the default policy but never really waits:
// Sleep returns at once (or with the context's error).
func fastRetry() *fetch.RetryPolicy {
	return &fetch.RetryPolicy{
		MaxAttempts: 9,
		BaseDelay:   time.Millisecond,
		MaxDelay:    5 * time.Millisecond,
		MaxElapsed:  time.Minute,
		Sleep:       func(ctx context.Context, _ time.Duration) error { return ctx.Err() },
	}
}

// faults are the faults every fetch test runs through: 429 with and
// without Retry-After, 5xx, cut bodies and slow answers.
func faults(seed int64) sim.Faults {
	return sim.Faults{
		Seed: seed, RateLimit: 0.06, RateLimitBare: 0.06, ServerError: 0.08, Cut: 0.05,
		Slow: 0.05, SlowDelay: 5 * time.Millisecond,
	}
}

// setup describes one test's interface and config.
type setup struct {
	granularity tally.Granularity
	start, now  string // usage.start (YYYY-MM-DD) and the clock (RFC 3339)
	window      string // usage.window
	lookback    string // usage.lookback
	reported    bool
	faults      sim.Faults
	paging      bool           // JSON usage answers paged every 500 rows
	months      []string       // reports.months
	deny        map[string]int // sim resources answered 403 or 404 (sim.Options.Deny)
	spike       sim.Spike      // an injected cost jump (sim.Options.Spike)
	extra       string         // YAML sections appended to the config (budgets, alerts)
	usage       string         // YAML lines added to the usage section, indented two spaces
}

// harness is a simulated interface behind an httptest server, a runner
// configured against it in a temp folder, and the logs it wrote.
type harness struct {
	t      *testing.T
	s      setup
	dir    string
	db     string
	clock  *clock
	sim    *sim.Server
	srv    *httptest.Server
	logs   *bytes.Buffer
	runner *Runner

	mu        sync.Mutex
	intercept func(w http.ResponseWriter, r *http.Request) bool
}

func newHarness(t *testing.T, s setup) *harness {
	t.Helper()
	if s.window == "" {
		s.window = "7d"
	}
	if s.lookback == "" {
		s.lookback = "2d"
	}
	now, err := time.Parse(time.RFC3339, s.now)
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, s: s, dir: t.TempDir(), clock: &clock{t: now}, logs: &bytes.Buffer{}}
	h.db = filepath.Join(h.dir, "tally.duckdb")
	h.sim = sim.New(sim.Options{
		Token: testToken, Seed: 3, Start: prooftest.Day(t, s.start), Now: h.clock.Now,
		PageSize: 500, UsagePaging: s.paging, Faults: s.faults, Deny: s.deny, Spike: s.spike,
	})
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.mu.Lock()
		f := h.intercept
		h.mu.Unlock()
		if f != nil && f(w, r) {
			return
		}
		h.sim.ServeHTTP(w, r)
	}))
	t.Cleanup(h.srv.Close)

	months := s.months
	if months == nil {
		months = []string{}
	}
	quoted := make([]string, len(months))
	for i, m := range months {
		quoted[i] = strconv.Quote(m)
	}
	yaml := fmt.Sprintf(`api:
  base_url: %s
  concurrency: 3
  timeout: 20s
usage:
  granularity: %s
  start: %s
  lookback: %s
  window: %s
  reported_date: %t
%sstore:
  path: tally.duckdb
reports:
  dir: reports
  months: [%s]
schedule:
  lock_wait: 200ms
  grace: 0s # a cancel also stops the windows in flight: they must roll back whole
%s`, h.srv.URL, s.granularity, s.start, s.lookback, s.window, s.reported, s.usage, strings.Join(quoted, ", "), s.extra)
	cfg, err := configs.Parse([]byte(yaml), h.dir, nil)
	if err != nil {
		t.Fatalf("config:\n%s\n%v", yaml, err)
	}
	log := zerolog.New(zerolog.SyncWriter(h.logs)).Level(zerolog.DebugLevel).With().Timestamp().Logger()
	h.runner = &Runner{Config: cfg, Token: secret.New(testToken), Log: log, Version: "test", Now: h.clock.Now, Retry: fastRetry()}
	t.Cleanup(func() { h.checkNoToken() })
	return h
}

// export is tally export against the harness: the analysts' published
// copy, the request over the config's export section. Importing export
// also registers its step for the jobs of these tests.
func (h *harness) export(ctx context.Context, req export.Request) (export.Summary, error) {
	st, err := OpenPublished(ctx, h.runner.Config, h.runner.Log)
	if err != nil {
		return export.Summary{}, fmt.Errorf("export: %w", err)
	}
	defer st.Close()
	return export.Run(ctx, &job.Env{Config: h.runner.Config, Store: st, Log: h.runner.Log, Clock: h.runner.Now}, req)
}

// setIntercept installs f in front of the sim: when f returns true it has
// answered the request.
func (h *harness) setIntercept(f func(w http.ResponseWriter, r *http.Request) bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.intercept = f
}

// usageStart reads the startDate of a usage POST and puts the body back
// for the sim; ok is false for any other request.
func usageStart(r *http.Request) (start string, ok bool) {
	if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/reports/usage") {
		return "", false
	}
	b, err := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(b))
	if err != nil {
		return "", false
	}
	var body struct {
		StartDate string `json:"startDate"`
	}
	if json.Unmarshal(b, &body) != nil {
		return "", false
	}
	return body.StartDate, true
}

// unavailable answers 503 with the interface's error body.
func unavailable(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusServiceUnavailable)
	io.WriteString(w, `{"error":{"code":"ServiceUnavailable","detail":"the service is temporarily unavailable; retry later"}}`)
}

// query is the usage query of [from, to) in the harness's granularity and
// basis.
func (h *harness) query(from, to time.Time) tally.UsageQuery {
	return tally.UsageQuery{
		Window:       tally.Window{Start: from, End: to, Granularity: h.s.granularity},
		ReportedDate: h.s.reported,
	}
}

// span is everything a fetch with default options covers at the clock's
// time: usage.start to tomorrow.
func (h *harness) span() tally.UsageQuery {
	return h.query(prooftest.Day(h.t, h.s.start), tally.Day.Truncate(h.clock.Now()).AddDate(0, 0, 1))
}

func (h *harness) basis() string { return string(h.span().Basis()) }

// fetch runs one recorded fetch like `tally fetch`.
func (h *harness) fetch(ctx context.Context) (FetchSummary, error) {
	return h.runner.Fetch(ctx, FetchOptions{})
}

func (h *harness) mustFetch() FetchSummary {
	h.t.Helper()
	sum, err := h.fetch(context.Background())
	if err != nil {
		h.t.Fatalf("fetch: %v", err)
	}
	if sum.Loaded != sum.Planned || sum.Planned == 0 {
		h.t.Fatalf("fetch loaded %d of %d windows", sum.Loaded, sum.Planned)
	}
	return sum
}

// wantExact checks that the database at path holds exactly the sim's truth
// for q at the sim's clock: totals per currency compared as decimals, the
// row count, and every row field by field.
func (h *harness) wantExact(path, label string, q tally.UsageQuery) {
	h.t.Helper()
	truth := h.sim.Truth(q)
	if truth.Rows == 0 || len(truth.Cost) == 0 {
		h.t.Fatalf("%s: the truth of %s is empty; the test covers nothing", label, q.Window)
	}
	want := prooftest.RenderAll(h.sim.Rows(q))
	prooftest.WithDB(h.t, path, func(db *sql.DB) {
		got, n := prooftest.Totals(h.t, db, q.Window.Granularity, string(q.Basis()), q.Window.Start, q.Window.End)
		if d := prooftest.SameTotals(got, truth.Cost); d != "" {
			h.t.Errorf("%s: totals per currency differ from the truth: %s", label, d)
		}
		if n != truth.Rows {
			h.t.Errorf("%s: %d rows, truth %d", label, n, truth.Rows)
		}
		rows := prooftest.RenderAll(prooftest.Stored(h.t, db, q.Window.Granularity, string(q.Basis()), q.Window.Start, q.Window.End))
		if d := prooftest.FirstDiff(rows, want); d != "" {
			h.t.Errorf("%s: rows differ from the truth: %s", label, d)
		}
	})
}

// ledgerOverlaps lists loaded windows of the same granularity, basis and
// scope that overlap: a window loaded twice.
func ledgerOverlaps(t testing.TB, path string) []string {
	t.Helper()
	var out []string
	prooftest.WithDB(t, path, func(db *sql.DB) {
		out = prooftest.QueryStrings(t, db, `SELECT a.granularity || ' ' || a.start || '..' || a."end" || ' overlaps ' || b.start || '..' || b."end"
FROM fetch_windows a JOIN fetch_windows b
  ON a.granularity = b.granularity AND a.basis = b.basis AND a.scope = b.scope
 AND a.start < b."end" AND b.start < a."end" AND (a.start, a."end") < (b.start, b."end")`)
	})
	return out
}

// checkNoToken fails the test when the token appears in the logs or in any
// file under the test's folder (database files, published copies, the
// unzipped parts of workbooks); the config there names no token at all.
func (h *harness) checkNoToken() {
	h.t.Helper()
	if bytes.Contains(h.logs.Bytes(), []byte(testToken)) {
		h.t.Errorf("the token appears in the logs")
	}
	if !bytes.Contains(h.logs.Bytes(), []byte(`"level":"debug"`)) {
		h.t.Errorf("no debug line was logged; the token check saw less than it should")
	}
	prooftest.NoTokenInFiles(h.t, h.dir, testToken)
}

// workbook writes month's workbook (the config's default basis) into the
// test's folder as name, from the database as the report command reads
// it, and opens it; it is closed with the test.
func (h *harness) workbook(month time.Time, name string) (*excelize.File, string) {
	h.t.Helper()
	path := filepath.Join(h.dir, name)
	st, err := store.Open(context.Background(), h.db, store.ReadOnly())
	if err != nil {
		h.t.Fatal(err)
	}
	_, err = Report(context.Background(), h.runner.Config, st.DB(), month, "", path, h.clock.Now, h.runner.Log)
	st.Close()
	if err != nil {
		h.t.Fatal(err)
	}
	f, err := excelize.OpenFile(path)
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() { f.Close() })
	return f, path
}
