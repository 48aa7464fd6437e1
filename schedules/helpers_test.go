package schedules

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/rs/zerolog"
	"github.com/xuri/excelize/v2"

	"github.com/tally-dev/tally"
	"github.com/tally-dev/tally/configs"
	"github.com/tally-dev/tally/export"
	"github.com/tally-dev/tally/fetch"
	"github.com/tally-dev/tally/fetch/sim"
	"github.com/tally-dev/tally/ingest"
	"github.com/tally-dev/tally/internal/secret"
	"github.com/tally-dev/tally/internal/testkit/prooftest"
	"github.com/tally-dev/tally/job"
	"github.com/tally-dev/tally/reports"
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
	h.srv = httptest.NewServer(h.sim)
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
	h.runner = &Runner{Config: cfg, CheckToken: ingest.CheckOrgToken, Token: secret.New(testToken), Log: log, Version: "test", Now: h.clock.Now, Retry: fastRetry()}
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
func (h *harness) fetch(ctx context.Context) (ingest.FetchSummary, error) {
	return runFetch(ctx, h.runner, ingest.FetchOptions{})
}

// runFetch is `tally fetch` with opts on r: ingest's step as one recorded
// run, as the command line runs it.
func runFetch(ctx context.Context, r *Runner, opts ingest.FetchOptions) (ingest.FetchSummary, error) {
	var sum ingest.FetchSummary
	out, err := r.Record(ctx, ingest.Command(opts), "", ingest.Step(opts, &sum))
	sum.Published = out.Published
	return sum, err
}

// nightlySummary is what runNightly did.
type nightlySummary struct {
	RunID   uuid.UUID
	Fetch   ingest.FetchSummary
	Reports []reports.Written
}

// runNightly is `tally run` on r as the command line runs it: the steps
// fetch and report (of months, nil: reports.months) under one run id,
// recorded under the only job's name when the config has one.
func runNightly(ctx context.Context, r *Runner, months []string) (nightlySummary, error) {
	var sum nightlySummary
	name := ""
	if jobs := r.Config.Schedule.Jobs; len(jobs) == 1 {
		name = jobs[0].Name
	}
	report := func(ctx context.Context, env *job.Env, _ uuid.UUID) (job.Result, error) {
		var err error
		sum.Reports, err = reports.WriteMonths(ctx, env, months)
		return job.Result{}, err
	}
	run, err := r.Run(ctx, "run", name, job.Named{Name: "fetch", Step: ingest.Step(ingest.FetchOptions{}, &sum.Fetch)}, job.Named{Name: "report", Step: report})
	sum.RunID, sum.Fetch.Published = run.Run.ID, run.Run.Published
	return sum, err
}

func (h *harness) mustFetch() ingest.FetchSummary {
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
	_, err = reports.Report(context.Background(), h.runner.Config, st.DB(), month, "", path, h.clock.Now, h.runner.Log)
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
