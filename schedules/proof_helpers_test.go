package schedules

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/tally-dev/tally"
	"github.com/tally-dev/tally/configs"
	"github.com/tally-dev/tally/fetch"
	"github.com/tally-dev/tally/fetch/sim"
	"github.com/tally-dev/tally/internal/prooftest"
	"github.com/tally-dev/tally/internal/secret"
)

// Helpers of the reliability and security proofs (faultmatrix, badanswers,
// crash and security tests), named "proof…"; what they share with the
// end-to-end tests (clock, day, withDB, render, sameTotals, firstDiff) lives
// in helpers_test.go.

// proofToken is the bearer token of every proof; the tests grep for it.
const proofToken = prooftest.Token

// proofSleeps records every wait the retry policy asks for; no real time
// passes, so a test sees exactly what a Retry-After or a backoff asked.
type proofSleeps struct {
	mu      sync.Mutex
	waits   []time.Duration
	onSleep func(n int) // called after the n-th wait is recorded
}

func (s *proofSleeps) sleep(ctx context.Context, d time.Duration) error {
	s.mu.Lock()
	s.waits = append(s.waits, d)
	n, f := len(s.waits), s.onSleep
	s.mu.Unlock()
	if f != nil {
		f(n)
	}
	return ctx.Err()
}

func (s *proofSleeps) all() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.waits)
}

// proofPolicy is the default retry policy (real delays, Retry-After
// honoured up to a minute) with the waits recorded instead of slept.
func proofPolicy(s *proofSleeps, attempts int) *fetch.RetryPolicy {
	p := fetch.DefaultRetry()
	p.MaxAttempts = attempts
	p.Sleep = s.sleep
	return &p
}

// proofBuffer is a log sink safe for concurrent writers.
type proofBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *proofBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *proofBuffer) Bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return bytes.Clone(b.b.Bytes())
}

// proofSetup is one test's interface and config; zero fields take the
// defaults of proofStart.
type proofSetup struct {
	granularity tally.Granularity // day
	start       string            // usage.start and the sim's first day: 2026-01-01
	now         string            // the clock, RFC 3339: 2026-03-10T12:00:00Z
	window      string            // usage.window: 14d
	lookback    string            // usage.lookback: 2d
	format      string            // usage.format: json
	reported    bool              // usage.reported_date
	timeout     string            // api.timeout: 20s
	concurrency int               // api.concurrency: 3
	attempts    int               // retry attempts per request: 9
	paging      bool              // usage answers paged every 200 rows
	faults      sim.Faults        // the sim's own faults
	months      []string          // reports.months: none
	tls         bool              // serve over TLS with a certificate nobody trusts
	manual      bool              // serve on a listener the test opens and closes (proofEnv.listen)
}

// proofEnv is a simulated interface behind a fault injector, a config in a
// temp folder and a runner that records its logs and retry waits.
type proofEnv struct {
	t      *testing.T
	s      proofSetup
	dir    string
	db     string
	clock  *clock
	sim    *sim.Server
	faults *prooftest.Faults
	url    string
	cfg    *configs.Config
	logs   *proofBuffer
	sleeps *proofSleeps

	// manual serving
	addr string
	mu   sync.Mutex
	hs   *http.Server
}

func proofStart(t *testing.T, s proofSetup) *proofEnv {
	t.Helper()
	if s.granularity == "" {
		s.granularity = tally.Day
	}
	if s.start == "" {
		s.start = "2026-01-01"
	}
	if s.now == "" {
		s.now = "2026-03-10T12:00:00Z"
	}
	if s.window == "" {
		s.window = "14d"
	}
	if s.lookback == "" {
		s.lookback = "2d"
	}
	if s.format == "" {
		s.format = "json"
	}
	if s.timeout == "" {
		s.timeout = "20s"
	}
	if s.concurrency == 0 {
		s.concurrency = 3
	}
	if s.attempts == 0 {
		s.attempts = 9
	}
	now, err := time.Parse(time.RFC3339, s.now)
	if err != nil {
		t.Fatal(err)
	}
	e := &proofEnv{t: t, s: s, dir: t.TempDir(), clock: &clock{t: now}, logs: &proofBuffer{}, sleeps: &proofSleeps{}}
	e.db = filepath.Join(e.dir, "tally.duckdb")
	e.sim = sim.New(sim.Options{
		Token: proofToken, Seed: 11, Start: prooftest.Day(t, s.start), Now: e.clock.Now,
		PageSize: 200, UsagePaging: s.paging, Faults: s.faults,
	})
	e.faults = prooftest.NewFaults(e.sim)
	switch {
	case s.manual:
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		e.addr = ln.Addr().String()
		ln.Close() // closed until the test calls listen: connections are refused
		e.url = "http://" + e.addr
		t.Cleanup(e.unlisten)
	case s.tls:
		srv := httptest.NewTLSServer(e.faults)
		srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshakes are the point
		t.Cleanup(srv.Close)
		e.url = srv.URL
	default:
		srv := httptest.NewServer(e.faults)
		t.Cleanup(srv.Close)
		e.url = srv.URL
	}
	e.cfg = e.config(e.dir)
	return e
}

// config parses the test's config for the database in dir.
func (e *proofEnv) config(dir string) *configs.Config {
	e.t.Helper()
	return e.configWith(dir, nil)
}

// configWith is config with the setup changed by mod first.
func (e *proofEnv) configWith(dir string, mod func(*proofSetup)) *configs.Config {
	e.t.Helper()
	s := e.s
	if mod != nil {
		mod(&s)
	}
	quoted := make([]string, len(s.months))
	for i, m := range s.months {
		quoted[i] = strconv.Quote(m)
	}
	yaml := fmt.Sprintf(`api:
  base_url: %s
  concurrency: %d
  timeout: %s
usage:
  granularity: %s
  start: %s
  lookback: %s
  window: %s
  format: %s
  reported_date: %t
store:
  path: tally.duckdb
reports:
  dir: reports
  months: [%s]
schedule:
  lock_wait: 1s
`, e.url, s.concurrency, s.timeout, s.granularity, s.start, s.lookback, s.window, s.format, s.reported, strings.Join(quoted, ", "))
	cfg, err := configs.Parse([]byte(yaml), dir, nil)
	if err != nil {
		e.t.Fatalf("config:\n%s\n%v", yaml, err)
	}
	return cfg
}

// runner is a Runner on cfg (the test's own when nil) that logs at debug
// level into e.logs and records its retry waits.
func (e *proofEnv) runner(cfg *configs.Config) *Runner {
	if cfg == nil {
		cfg = e.cfg
	}
	log := zerolog.New(e.logs).Level(zerolog.DebugLevel).With().Timestamp().Logger()
	return &Runner{Config: cfg, Token: secret.New(proofToken), Log: log, Version: "proof", Now: e.clock.Now,
		Retry: proofPolicy(e.sleeps, e.s.attempts)}
}

// fetch runs one recorded fetch of every due window, like `tally fetch`.
func (e *proofEnv) fetch() (FetchSummary, error) {
	return e.runner(nil).Fetch(context.Background(), FetchOptions{})
}

// mustFetch fetches and fails the test unless every planned window loaded.
func (e *proofEnv) mustFetch() FetchSummary {
	e.t.Helper()
	sum, err := e.fetch()
	if err != nil {
		e.t.Fatalf("fetch: %v", err)
	}
	if sum.Planned == 0 || sum.Loaded != sum.Planned {
		e.t.Fatalf("fetch loaded %d of %d windows", sum.Loaded, sum.Planned)
	}
	return sum
}

// span is what a fetch with default options covers: usage.start to
// tomorrow, at the clock's time.
func (e *proofEnv) span() tally.UsageQuery {
	return e.query(prooftest.Day(e.t, e.s.start), tally.Day.Truncate(e.clock.Now()).AddDate(0, 0, 1))
}

func (e *proofEnv) query(from, to time.Time) tally.UsageQuery {
	return tally.UsageQuery{Window: tally.Window{Start: from, End: to, Granularity: e.s.granularity}, ReportedDate: e.s.reported}
}

// listen opens the manual server's port again (the same address).
func (e *proofEnv) listen() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.hs != nil {
		return
	}
	ln, err := net.Listen("tcp", e.addr)
	if err != nil {
		e.t.Errorf("listen again on %s: %v", e.addr, err)
		return
	}
	e.hs = &http.Server{Handler: e.faults, ReadHeaderTimeout: 10 * time.Second}
	go e.hs.Serve(ln)
}

// unlisten closes the manual server's port and its connections.
func (e *proofEnv) unlisten() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.hs != nil {
		e.hs.Close()
		e.hs = nil
	}
}
