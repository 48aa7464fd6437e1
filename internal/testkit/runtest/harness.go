package runtest

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net"
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
	"github.com/tally-dev/tally/fetch"
	"github.com/tally-dev/tally/fetch/sim"
	"github.com/tally-dev/tally/ingest"
	"github.com/tally-dev/tally/internal/secret"
	"github.com/tally-dev/tally/internal/testkit/prooftest"
	"github.com/tally-dev/tally/internal/testkit/storetest"
	"github.com/tally-dev/tally/job"
	"github.com/tally-dev/tally/reports"
	"github.com/tally-dev/tally/schedules"
	"github.com/tally-dev/tally/store"
)

// Token is the bearer token of every test; tests check it never lands
// in logs, database files or workbooks.
const Token = "tok-5e3c1a9f07d24b68b1e0c4a7d92f36e8"

// clock is the one clock of a test: the sim's and the runner's.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}

// FastRetry retries as often as the default policy but never really waits:
// Sleep returns at once (or with the context's error).
func FastRetry() *fetch.RetryPolicy {
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
func Faults(seed int64) sim.Faults {
	return sim.Faults{
		Seed: seed, RateLimit: 0.06, RateLimitBare: 0.06, ServerError: 0.08, Cut: 0.05,
		Slow: 0.05, SlowDelay: 5 * time.Millisecond,
	}
}

// setup describes one test's interface and config.
type Setup struct {
	Granularity tally.Granularity
	Start, Now  string // usage.start (YYYY-MM-DD) and the clock (RFC 3339)
	Window      string // usage.window
	Lookback    string // usage.lookback
	Reported    bool
	Faults      sim.Faults
	Paging      bool           // JSON usage answers paged every 500 rows
	Months      []string       // reports.months
	Deny        map[string]int // sim resources answered 403 or 404 (sim.Options.Deny)
	Spike       sim.Spike      // an injected cost jump (sim.Options.Spike)
	Extra       string         // YAML sections appended to the config (budgets, alerts)
	Usage       string         // YAML lines added to the usage section, indented two spaces
}

// harness is a simulated interface behind an httptest server, a runner
// configured against it in a temp folder, and the logs it wrote.
type Harness struct {
	T      *testing.T
	S      Setup
	Dir    string
	DB     string
	Clock  *Clock
	Sim    *sim.Server
	Srv    *httptest.Server
	Logs   *bytes.Buffer
	Runner *schedules.Runner

	mu        sync.Mutex
	intercept func(w http.ResponseWriter, r *http.Request) bool
}

func NewHarness(t *testing.T, s Setup) *Harness {
	t.Helper()
	if s.Window == "" {
		s.Window = "7d"
	}
	if s.Lookback == "" {
		s.Lookback = "2d"
	}
	now, err := time.Parse(time.RFC3339, s.Now)
	if err != nil {
		t.Fatal(err)
	}
	h := &Harness{T: t, S: s, Dir: t.TempDir(), Clock: &Clock{t: now}, Logs: &bytes.Buffer{}}
	h.DB = filepath.Join(h.Dir, "tally.duckdb")
	storetest.Place(t, h.DB)
	h.Sim = sim.New(sim.Options{
		Token: Token, Seed: 3, Start: prooftest.Day(t, s.Start), Now: h.Clock.Now,
		PageSize: 500, UsagePaging: s.Paging, Faults: s.Faults, Deny: s.Deny, Spike: s.Spike,
	})
	h.Srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.mu.Lock()
		f := h.intercept
		h.mu.Unlock()
		if f != nil && f(w, r) {
			return
		}
		h.Sim.ServeHTTP(w, r)
	}))
	t.Cleanup(h.Srv.Close)

	months := s.Months
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
%s`, h.Srv.URL, s.Granularity, s.Start, s.Lookback, s.Window, s.Reported, s.Usage, strings.Join(quoted, ", "), s.Extra)
	cfg, err := configs.Parse([]byte(yaml), h.Dir, nil)
	if err != nil {
		t.Fatalf("config:\n%s\n%v", yaml, err)
	}
	log := zerolog.New(zerolog.SyncWriter(h.Logs)).Level(zerolog.DebugLevel).With().Timestamp().Logger()
	h.Runner = &schedules.Runner{Config: cfg, CheckToken: ingest.CheckOrgToken, Token: secret.New(Token), Log: log, Version: "test", Now: h.Clock.Now, Retry: FastRetry()}
	t.Cleanup(func() { h.checkNoToken() })
	return h
}

// setIntercept installs f in front of the sim: when f returns true it has
// answered the request.
func (h *Harness) SetIntercept(f func(w http.ResponseWriter, r *http.Request) bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.intercept = f
}

// UsageStart reads the startDate of a usage POST and puts the body back
// for the sim; ok is false for any other request.
func UsageStart(r *http.Request) (start string, ok bool) {
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

// Unavailable answers 503 with the interface's error body.
func Unavailable(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusServiceUnavailable)
	io.WriteString(w, `{"error":{"code":"ServiceUnavailable","detail":"the service is temporarily Unavailable; retry later"}}`)
}

// Published runs f with the harness runner's job.Env on the analysts'
// published copy, opened as `tally export` opens it, and closes the copy
// when f returns. (Export's own tests use runtest, so runtest imports no
// export: a test hands its export.Run in f.)
func (h *Harness) Published(ctx context.Context, f func(env *job.Env) error) error {
	st, err := schedules.OpenPublished(ctx, h.Runner.Config, h.Runner.Log)
	if err != nil {
		return fmt.Errorf("export: %w", err)
	}
	defer st.Close()
	return f(&job.Env{Config: h.Runner.Config, Store: st, Log: h.Runner.Log, Clock: h.Runner.Now})
}

// query is the usage query of [from, to) in the harness's granularity and
// basis.
func (h *Harness) Query(from, to time.Time) tally.UsageQuery {
	return tally.UsageQuery{
		Window:       tally.Window{Start: from, End: to, Granularity: h.S.Granularity},
		ReportedDate: h.S.Reported,
	}
}

// span is everything a fetch with default options covers at the clock's
// time: usage.start to tomorrow.
func (h *Harness) Span() tally.UsageQuery {
	return h.Query(prooftest.Day(h.T, h.S.Start), tally.Day.Truncate(h.Clock.Now()).AddDate(0, 0, 1))
}

func (h *Harness) Basis() string { return string(h.Span().Basis()) }

// fetch runs one recorded fetch like `tally fetch`.
func (h *Harness) Fetch(ctx context.Context) (ingest.FetchSummary, error) {
	return RunFetch(ctx, h.Runner, ingest.FetchOptions{})
}

// RunFetch is `tally fetch` with opts on r: ingest's step as one recorded
// run, as the command line runs it.
func RunFetch(ctx context.Context, r *schedules.Runner, opts ingest.FetchOptions) (ingest.FetchSummary, error) {
	var sum ingest.FetchSummary
	out, err := r.Record(ctx, ingest.Command(opts), "", ingest.Step(opts, &sum))
	sum.Published = out.Published
	return sum, err
}

func (h *Harness) MustFetch() ingest.FetchSummary {
	h.T.Helper()
	sum, err := h.Fetch(context.Background())
	if err != nil {
		h.T.Fatalf("fetch: %v", err)
	}
	if sum.Loaded != sum.Planned || sum.Planned == 0 {
		h.T.Fatalf("fetch loaded %d of %d windows", sum.Loaded, sum.Planned)
	}
	return sum
}

// wantExact checks that the database at path holds exactly the sim's truth
// for q at the sim's clock: totals per currency compared as decimals, the
// row count, and every row field by field.
func (h *Harness) WantExact(path, label string, q tally.UsageQuery) {
	h.T.Helper()
	truth := h.Sim.Truth(q)
	if truth.Rows == 0 || len(truth.Cost) == 0 {
		h.T.Fatalf("%s: the truth of %s is empty; the test covers nothing", label, q.Window)
	}
	want := prooftest.RenderAll(h.Sim.Rows(q))
	prooftest.WithDB(h.T, path, func(db *sql.DB) {
		got, n := prooftest.Totals(h.T, db, q.Window.Granularity, string(q.Basis()), q.Window.Start, q.Window.End)
		if d := prooftest.SameTotals(got, truth.Cost); d != "" {
			h.T.Errorf("%s: totals per currency differ from the truth: %s", label, d)
		}
		if n != truth.Rows {
			h.T.Errorf("%s: %d rows, truth %d", label, n, truth.Rows)
		}
		rows := prooftest.RenderAll(prooftest.Stored(h.T, db, q.Window.Granularity, string(q.Basis()), q.Window.Start, q.Window.End))
		if d := prooftest.FirstDiff(rows, want); d != "" {
			h.T.Errorf("%s: rows differ from the truth: %s", label, d)
		}
	})
}

// LedgerOverlaps lists loaded windows of the same granularity, basis and
// scope that overlap: a window loaded twice.
func LedgerOverlaps(t testing.TB, path string) []string {
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
func (h *Harness) checkNoToken() {
	h.T.Helper()
	if bytes.Contains(h.Logs.Bytes(), []byte(Token)) {
		h.T.Errorf("the token appears in the logs")
	}
	if !bytes.Contains(h.Logs.Bytes(), []byte(`"level":"debug"`)) {
		h.T.Errorf("no debug line was logged; the token check saw less than it should")
	}
	prooftest.NoTokenInFiles(h.T, h.Dir, Token)
}

// workbook writes month's workbook (the config's default basis) into the
// test's folder as name, from the database as the report command reads
// it, and opens it; it is closed with the test.
func (h *Harness) Workbook(month time.Time, name string) (*excelize.File, string) {
	h.T.Helper()
	path := filepath.Join(h.Dir, name)
	st, err := store.Open(context.Background(), h.DB, store.ReadOnly())
	if err != nil {
		h.T.Fatal(err)
	}
	_, err = reports.Report(context.Background(), h.Runner.Config, st.DB(), month, "", path, h.Clock.Now, h.Runner.Log)
	st.Close()
	if err != nil {
		h.T.Fatal(err)
	}
	f, err := excelize.OpenFile(path)
	if err != nil {
		h.T.Fatal(err)
	}
	h.T.Cleanup(func() { f.Close() })
	return f, path
}

// SMTPConfig points reports.deliver.smtp at a test mail server.
func SMTPConfig(t *testing.T, addr string, timeout time.Duration) *configs.SMTPConfig {
	t.Helper()
	host, port, _ := net.SplitHostPort(addr)
	n, err := strconv.Atoi(port)
	if err != nil {
		t.Fatal(err)
	}
	return &configs.SMTPConfig{
		Host: host, Port: n, Security: "starttls", Username: "tally", PasswordEnv: "TALLY_TEST_SMTP_PASSWORD",
		From: "tally@example.com", To: []string{"finance@example.com"}, Subject: "Tally cost workbook {month}", Timeout: timeout,
	}
}
