package schedules

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os/exec"
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
)

// Helpers of the reliability and security proofs (faultmatrix, badanswers,
// crash and security tests), named "proof…"; what they share with the
// end-to-end tests (clock, day, withDB, render, sameTotals, firstDiff) lives
// in helpers_test.go.

// proofToken is the bearer token of every proof; the tests grep for it.
const proofToken = "proof-tok-9b1f4c7e2a6d48f0b3e5c8a1d7f2e604"

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
	faults *proofFaults
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
	e.faults = &proofFaults{next: e.sim, attempts: map[string]int{}}
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
	return &Runner{Config: cfg, Token: proofToken, Log: log, Version: "proof", Now: e.clock.Now,
		retry: proofPolicy(e.sleeps, e.s.attempts)}
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

// proofFaults stands in front of the sim and lets a rule answer a request
// in its place. Rules see how many times the same request (method, URL and
// body) came before, so "fail the first k attempts" holds per request
// whatever the concurrency.
type proofFaults struct {
	next http.Handler

	mu       sync.Mutex
	attempts map[string]int
	rule     proofRule
	answered int // requests a rule answered
}

// proofRule answers r itself and returns true, or returns false to let the
// sim answer. attempt counts from 1 per distinct request.
type proofRule func(w http.ResponseWriter, r *http.Request, req proofRequest) bool

// proofRequest is what a rule knows of a request.
type proofRequest struct {
	attempt    int
	usage      bool   // a usage query
	start, end string // the usage query's dates
	body       []byte
}

func (f *proofFaults) set(rule proofRule) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rule = rule
	f.attempts = map[string]int{}
	f.answered = 0
}

// faulty is the number of requests a rule answered since set.
func (f *proofFaults) faulty() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.answered
}

// distinct is the number of distinct requests seen since set.
func (f *proofFaults) distinct() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.attempts)
}

func (f *proofFaults) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	req := proofRequest{body: body}
	if strings.HasSuffix(r.URL.Path, "/reports/usage") {
		var q struct {
			StartDate string `json:"startDate"`
			EndDate   string `json:"endDate"`
		}
		if json.Unmarshal(body, &q) == nil {
			req.usage, req.start, req.end = true, q.StartDate, q.EndDate
		}
	}
	key := r.Method + " " + r.URL.RequestURI() + " " + string(body)
	f.mu.Lock()
	f.attempts[key]++
	req.attempt = f.attempts[key]
	rule := f.rule
	f.mu.Unlock()
	if rule != nil {
		count := func() {
			f.mu.Lock()
			f.answered++
			f.mu.Unlock()
		}
		aborted := true // a rule that drops the connection panics out
		defer func() {
			if aborted {
				count()
			}
		}()
		answered := rule(w, r, req)
		aborted = false
		if answered {
			count()
			return
		}
	}
	f.next.ServeHTTP(w, r)
}

// proofRecord has next answer r into memory.
func proofRecord(next http.Handler, r *http.Request) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	next.ServeHTTP(rec, r)
	return rec
}

// proofError answers status with the interface's Error body.
func proofError(w http.ResponseWriter, status int, retryAfter string) {
	if retryAfter != "" {
		w.Header().Set("Retry-After", retryAfter)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	fmt.Fprintf(w, `{"error":{"code":%q,"detail":"injected by the test"},"ref":"proof-%d","status":%d}`,
		strings.ReplaceAll(http.StatusText(status), " ", ""), status, status)
}

// proofReset drops the connection with a TCP reset before any answer.
func proofReset(w http.ResponseWriter) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		panic("proofReset: the response writer cannot be hijacked")
	}
	conn, _, err := hj.Hijack()
	if err != nil {
		panic(err)
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		tc.SetLinger(0)
	}
	conn.Close()
}

// proofSend writes a recorded answer with body in place of its own.
func proofSend(w http.ResponseWriter, rec *httptest.ResponseRecorder, body []byte) {
	for k, v := range rec.Header() {
		w.Header()[k] = v
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(rec.Code)
	w.Write(body)
}

// proofCut sends the first part of the sim's answer (cutAt of its bytes,
// mid-row for a usage answer) under the full Content-Length, then drops
// the connection.
func proofCut(w http.ResponseWriter, r *http.Request, next http.Handler, frac float64) {
	rec := proofRecord(next, r)
	b := rec.Body.Bytes()
	for k, v := range rec.Header() {
		w.Header()[k] = v
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(rec.Code)
	w.Write(b[:int(float64(len(b))*frac)])
	w.(http.Flusher).Flush()
	panic(http.ErrAbortHandler)
}

// proofStall sends half of the sim's answer, then pauses for d (or until
// the client gives up) before the rest.
func proofStall(w http.ResponseWriter, r *http.Request, next http.Handler, d time.Duration) {
	rec := proofRecord(next, r)
	b := rec.Body.Bytes()
	for k, v := range rec.Header() {
		w.Header()[k] = v
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(rec.Code)
	w.Write(b[:len(b)/2])
	w.(http.Flusher).Flush()
	select {
	case <-time.After(d):
	case <-r.Context().Done():
		return
	}
	w.Write(b[len(b)/2:])
}

// proofWait pauses for d (or until the client gives up) before the sim
// answers: an answer slower than the client's timeout.
func proofWait(w http.ResponseWriter, r *http.Request, next http.Handler, d time.Duration) {
	select {
	case <-time.After(d):
		next.ServeHTTP(w, r)
	case <-r.Context().Done():
	}
}

// proofStored reads back the usage rows of q's granularity and basis whose
// filtered date is in q's window, and the run that wrote each.
func proofStored(t testing.TB, db *sql.DB, q tally.UsageQuery) (rows []tally.MeterData, runs []string) {
	t.Helper()
	return prooftest.StoredRuns(t, db, q.Window.Granularity, string(q.Basis()), q.Window.Start, q.Window.End)
}

// proofTotals sums rows' costs per currency, exactly.
func proofTotals(rows []tally.MeterData) map[string]tally.Decimal {
	out := map[string]tally.Decimal{}
	for _, r := range rows {
		out[r.Currency] = out[r.Currency].Add(r.Cost)
	}
	return out
}

// proofExact checks that the database at path holds exactly the sim's
// truth for q at the sim's clock: totals per currency and the row count
// against sim.Truth, and every row, field by field, against sim.Rows.
func proofExact(t testing.TB, s *sim.Server, path string, q tally.UsageQuery) {
	t.Helper()
	truth := s.Truth(q)
	if truth.Rows == 0 || len(truth.Cost) == 0 {
		t.Fatalf("the truth of %s is empty: the test covers nothing", q.Window)
	}
	prooftest.WithDB(t, path, func(db *sql.DB) {
		rows, _ := proofStored(t, db, q)
		if d := prooftest.SameTotals(proofTotals(rows), truth.Cost); d != "" {
			t.Errorf("%s: totals per currency differ from the truth: %s", q.Window, d)
		}
		if len(rows) != truth.Rows {
			t.Errorf("%s: %d rows stored, truth %d", q.Window, len(rows), truth.Rows)
		}
		if d := prooftest.FirstDiff(prooftest.RenderAll(rows), prooftest.RenderAll(s.Rows(q))); d != "" {
			t.Errorf("%s: rows differ from the truth: %s", q.Window, d)
		}
	})
	proofNoDoubles(t, path)
}

// proofNoDoubles checks the ledger: no window recorded twice, and every
// usage row inside a window the ledger holds (a row no later load of its
// window would replace would be counted twice).
func proofNoDoubles(t testing.TB, path string) {
	t.Helper()
	prooftest.WithDB(t, path, func(db *sql.DB) {
		var twice, orphans int
		if err := db.QueryRow(`SELECT count(*) FROM (SELECT 1 FROM fetch_windows
GROUP BY granularity, basis, scope, start, "end" HAVING count(*) > 1)`).Scan(&twice); err != nil {
			t.Fatal(err)
		}
		if twice > 0 {
			t.Errorf("%d window(s) recorded twice in the ledger", twice)
		}
		if err := db.QueryRow(`SELECT count(*) FROM usage u WHERE NOT EXISTS (
  SELECT 1 FROM fetch_windows w
  WHERE w.granularity = u.granularity AND w.basis = u.basis
    AND CASE u.basis WHEN 'reported' THEN u.date_processed ELSE u.date END >= w.start
    AND CASE u.basis WHEN 'reported' THEN u.date_processed ELSE u.date END < w."end")`).Scan(&orphans); err != nil {
			t.Fatal(err)
		}
		if orphans > 0 {
			t.Errorf("%d usage row(s) lie outside every window of the ledger", orphans)
		}
	})
}

// proofNoToken fails when the token is in the bytes given.
func proofNoToken(t testing.TB, what string, b []byte) {
	t.Helper()
	if bytes.Contains(b, []byte(proofToken)) {
		t.Errorf("the token appears in %s", what)
	}
}

// proofBinary builds cmd/tally into the test's temp folder and returns its
// path: the crash and security tests run Tally as a real process.
func proofBinary(t testing.TB) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "tally")
	cmd := exec.Command("go", "build", "-o", bin, "github.com/tally-dev/tally/cmd/tally")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// proofServe serves h on loopback for the test's lifetime and returns its
// base URL.
func proofServe(t testing.TB, h http.Handler) string {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}
