package runtest

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
	"github.com/tally-dev/tally/ingest"
	"github.com/tally-dev/tally/internal/secret"
	"github.com/tally-dev/tally/internal/testkit/prooftest"
	"github.com/tally-dev/tally/internal/testkit/storetest"
	"github.com/tally-dev/tally/schedules"
)

// Helpers of the reliability and security proofs (faultmatrix, badanswers,
// crash and security tests), named "Proof…"; what they share with the
// end-to-end tests (the clock) lives in harness.go, the rest in prooftest.

// ProofToken is the bearer token of every proof; the tests grep for it.
const ProofToken = prooftest.Token

// ProofSleeps records every wait the retry policy asks for; no real time
// passes, so a test sees exactly what a Retry-After or a backoff asked.
type ProofSleeps struct {
	mu      sync.Mutex
	waits   []time.Duration
	OnSleep func(n int) // called after the n-th wait is recorded
}

func (s *ProofSleeps) Sleep(ctx context.Context, d time.Duration) error {
	s.mu.Lock()
	s.waits = append(s.waits, d)
	n, f := len(s.waits), s.OnSleep
	s.mu.Unlock()
	if f != nil {
		f(n)
	}
	return ctx.Err()
}

func (s *ProofSleeps) All() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.waits)
}

// ProofPolicy is the default retry policy (real delays, Retry-After
// honoured up to a minute) with the waits recorded instead of slept.
func ProofPolicy(s *ProofSleeps, attempts int) *fetch.RetryPolicy {
	p := fetch.DefaultRetry()
	p.MaxAttempts = attempts
	p.Sleep = s.Sleep
	return &p
}

// ProofBuffer is a log sink safe for concurrent writers.
type ProofBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *ProofBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *ProofBuffer) Bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return bytes.Clone(b.b.Bytes())
}

// ProofSetup is one test's interface and config; zero fields take the
// defaults of ProofStart.
type ProofSetup struct {
	Granularity tally.Granularity // day
	Start       string            // usage.start and the sim's first day: 2026-01-01
	Now         string            // the clock, RFC 3339: 2026-03-10T12:00:00Z
	Window      string            // usage.window: 14d
	Lookback    string            // usage.lookback: 2d
	Format      string            // usage.format: json
	Reported    bool              // usage.reported_date
	Timeout     string            // api.timeout: 20s
	Concurrency int               // api.concurrency: 3
	Attempts    int               // retry attempts per request: 9
	Paging      bool              // usage answers paged every 200 rows
	Faults      sim.Faults        // the sim's own faults
	Months      []string          // reports.months: none
	Tls         bool              // serve over TLS with a certificate nobody trusts
	Manual      bool              // serve on a listener the test opens and closes (ProofEnv.listen)
	// NoStore leaves the database to the first run to create; otherwise
	// one is placed as a first run would leave it (storetest.Place).
	NoStore bool
}

// ProofEnv is a simulated interface behind a fault injector, a config in a
// temp folder and a runner that records its logs and retry waits.
type ProofEnv struct {
	T      *testing.T
	S      ProofSetup
	Dir    string
	DB     string
	Clock  *Clock
	Sim    *sim.Server
	Faults *prooftest.Faults
	URL    string
	Cfg    *configs.Config
	Logs   *ProofBuffer
	Sleeps *ProofSleeps

	// manual serving
	addr string
	mu   sync.Mutex
	hs   *http.Server
}

func ProofStart(t *testing.T, s ProofSetup) *ProofEnv {
	t.Helper()
	if s.Granularity == "" {
		s.Granularity = tally.Day
	}
	if s.Start == "" {
		s.Start = "2026-01-01"
	}
	if s.Now == "" {
		s.Now = "2026-03-10T12:00:00Z"
	}
	if s.Window == "" {
		s.Window = "14d"
	}
	if s.Lookback == "" {
		s.Lookback = "2d"
	}
	if s.Format == "" {
		s.Format = "json"
	}
	if s.Timeout == "" {
		s.Timeout = "20s"
	}
	if s.Concurrency == 0 {
		s.Concurrency = 3
	}
	if s.Attempts == 0 {
		s.Attempts = 9
	}
	now, err := time.Parse(time.RFC3339, s.Now)
	if err != nil {
		t.Fatal(err)
	}
	e := &ProofEnv{T: t, S: s, Dir: t.TempDir(), Clock: &Clock{t: now}, Logs: &ProofBuffer{}, Sleeps: &ProofSleeps{}}
	e.DB = filepath.Join(e.Dir, "tally.duckdb")
	if !s.NoStore {
		storetest.Place(t, e.DB)
	}
	e.Sim = sim.New(sim.Options{
		Token: ProofToken, Seed: 11, Start: prooftest.Day(t, s.Start), Now: e.Clock.Now,
		PageSize: 200, UsagePaging: s.Paging, Faults: s.Faults,
	})
	e.Faults = prooftest.NewFaults(e.Sim)
	switch {
	case s.Manual:
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		e.addr = ln.Addr().String()
		ln.Close() // closed until the test calls listen: connections are refused
		e.URL = "http://" + e.addr
		t.Cleanup(e.Unlisten)
	case s.Tls:
		srv := httptest.NewTLSServer(e.Faults)
		srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshakes are the point
		t.Cleanup(srv.Close)
		e.URL = srv.URL
	default:
		srv := httptest.NewServer(e.Faults)
		t.Cleanup(srv.Close)
		e.URL = srv.URL
	}
	e.Cfg = e.Config(e.Dir)
	return e
}

// config parses the test's config for the database in dir.
func (e *ProofEnv) Config(dir string) *configs.Config {
	e.T.Helper()
	return e.ConfigWith(dir, nil)
}

// configWith is config with the setup changed by mod first.
func (e *ProofEnv) ConfigWith(dir string, mod func(*ProofSetup)) *configs.Config {
	e.T.Helper()
	s := e.S
	if mod != nil {
		mod(&s)
	}
	quoted := make([]string, len(s.Months))
	for i, m := range s.Months {
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
`, e.URL, s.Concurrency, s.Timeout, s.Granularity, s.Start, s.Lookback, s.Window, s.Format, s.Reported, strings.Join(quoted, ", "))
	cfg, err := configs.Parse([]byte(yaml), dir, nil)
	if err != nil {
		e.T.Fatalf("config:\n%s\n%v", yaml, err)
	}
	return cfg
}

// runner is a Runner on cfg (the test's own when nil) that logs at debug
// level into e.Logs and records its retry waits.
func (e *ProofEnv) Runner(cfg *configs.Config) *schedules.Runner {
	if cfg == nil {
		cfg = e.Cfg
	}
	log := zerolog.New(e.Logs).Level(zerolog.DebugLevel).With().Timestamp().Logger()
	return &schedules.Runner{Config: cfg, CheckToken: ingest.CheckOrgToken, Token: secret.New(ProofToken), Log: log, Version: "proof", Now: e.Clock.Now,
		Retry: ProofPolicy(e.Sleeps, e.S.Attempts)}
}

// fetch runs one recorded fetch of every due window, like `tally fetch`.
func (e *ProofEnv) Fetch() (ingest.FetchSummary, error) {
	return RunFetch(context.Background(), e.Runner(nil), ingest.FetchOptions{})
}

// mustFetch fetches and fails the test unless every planned window loaded.
func (e *ProofEnv) MustFetch() ingest.FetchSummary {
	e.T.Helper()
	sum, err := e.Fetch()
	if err != nil {
		e.T.Fatalf("fetch: %v", err)
	}
	if sum.Planned == 0 || sum.Loaded != sum.Planned {
		e.T.Fatalf("fetch loaded %d of %d windows", sum.Loaded, sum.Planned)
	}
	return sum
}

// span is what a fetch with default options covers: usage.start to
// tomorrow, at the clock's time.
func (e *ProofEnv) Span() tally.UsageQuery {
	return e.Query(prooftest.Day(e.T, e.S.Start), tally.Day.Truncate(e.Clock.Now()).AddDate(0, 0, 1))
}

func (e *ProofEnv) Query(from, to time.Time) tally.UsageQuery {
	return tally.UsageQuery{Window: tally.Window{Start: from, End: to, Granularity: e.S.Granularity}, ReportedDate: e.S.Reported}
}

// listen opens the manual server's port again (the same address).
func (e *ProofEnv) Listen() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.hs != nil {
		return
	}
	ln, err := net.Listen("tcp", e.addr)
	if err != nil {
		e.T.Errorf("listen again on %s: %v", e.addr, err)
		return
	}
	e.hs = &http.Server{Handler: e.Faults, ReadHeaderTimeout: 10 * time.Second}
	go e.hs.Serve(ln)
}

// unlisten closes the manual server's port and its connections.
func (e *ProofEnv) Unlisten() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.hs != nil {
		e.hs.Close()
		e.hs = nil
	}
}
