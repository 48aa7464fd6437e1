package prooftest

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tally-dev/tally"
	"github.com/tally-dev/tally/fetch/sim"
)

// Token is the bearer token of every proof; the proofs grep for it.
const Token = "proof-tok-9b1f4c7e2a6d48f0b3e5c8a1d7f2e604"

// NewFaults puts a fault injector in front of next, with no rule yet.
func NewFaults(next http.Handler) *Faults {
	return &Faults{next: next, attempts: map[string]int{}}
}

// Faults stands in front of the sim and lets a rule answer a request
// in its place. Rules see how many times the same request (method, URL and
// body) came before, so "fail the first k attempts" holds per request
// whatever the concurrency.
type Faults struct {
	next http.Handler

	mu       sync.Mutex
	attempts map[string]int
	rule     Rule
	answered int // requests a rule answered
}

// Rule answers r itself and returns true, or returns false to let the
// sim answer. attempt counts from 1 per distinct request.
type Rule func(w http.ResponseWriter, r *http.Request, req Request) bool

// Request is what a rule knows of a request.
type Request struct {
	Attempt    int
	Usage      bool   // a usage query
	Start, End string // the usage query's dates
	Body       []byte
}

func (f *Faults) Set(rule Rule) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rule = rule
	f.attempts = map[string]int{}
	f.answered = 0
}

// faulty is the number of requests a rule answered since set.
func (f *Faults) Faulty() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.answered
}

// distinct is the number of distinct requests seen since set.
func (f *Faults) Distinct() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.attempts)
}

func (f *Faults) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	req := Request{Body: body}
	if strings.HasSuffix(r.URL.Path, "/reports/usage") {
		var q struct {
			StartDate string `json:"startDate"`
			EndDate   string `json:"endDate"`
		}
		if json.Unmarshal(body, &q) == nil {
			req.Usage, req.Start, req.End = true, q.StartDate, q.EndDate
		}
	}
	key := r.Method + " " + r.URL.RequestURI() + " " + string(body)
	f.mu.Lock()
	f.attempts[key]++
	req.Attempt = f.attempts[key]
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

// Record has next answer r into memory.
func Record(next http.Handler, r *http.Request) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	next.ServeHTTP(rec, r)
	return rec
}

// Error answers status with the interface's Error body.
func Error(w http.ResponseWriter, status int, retryAfter string) {
	if retryAfter != "" {
		w.Header().Set("Retry-After", retryAfter)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	fmt.Fprintf(w, `{"error":{"code":%q,"detail":"injected by the test"},"ref":"proof-%d","status":%d}`,
		strings.ReplaceAll(http.StatusText(status), " ", ""), status, status)
}

// Reset drops the connection with a TCP reset before any answer.
func Reset(w http.ResponseWriter) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		panic("Reset: the response writer cannot be hijacked")
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

// Send writes a recorded answer with body in place of its own.
func Send(w http.ResponseWriter, rec *httptest.ResponseRecorder, body []byte) {
	for k, v := range rec.Header() {
		w.Header()[k] = v
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(rec.Code)
	w.Write(body)
}

// Cut sends the first part of the sim's answer (cutAt of its bytes,
// mid-row for a usage answer) under the full Content-Length, then drops
// the connection.
func Cut(w http.ResponseWriter, r *http.Request, next http.Handler, frac float64) {
	rec := Record(next, r)
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

// Stall sends half of the sim's answer, then pauses for d (or until
// the client gives up) before the rest.
func Stall(w http.ResponseWriter, r *http.Request, next http.Handler, d time.Duration) {
	rec := Record(next, r)
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

// Wait pauses for d (or until the client gives up) before the sim
// answers: an answer slower than the client's timeout.
func Wait(w http.ResponseWriter, r *http.Request, next http.Handler, d time.Duration) {
	select {
	case <-time.After(d):
		next.ServeHTTP(w, r)
	case <-r.Context().Done():
	}
}

// StoredQuery reads back the usage rows of q's granularity and basis whose
// filtered date is in q's window, and the run that wrote each.
func StoredQuery(t testing.TB, db *sql.DB, q tally.UsageQuery) (rows []tally.MeterData, runs []string) {
	t.Helper()
	return StoredRuns(t, db, q.Window.Granularity, string(q.Basis()), q.Window.Start, q.Window.End)
}

// SumRows sums rows' costs per currency, exactly.
func SumRows(rows []tally.MeterData) map[string]tally.Decimal {
	out := map[string]tally.Decimal{}
	for _, r := range rows {
		out[r.Currency] = out[r.Currency].Add(r.Cost)
	}
	return out
}

// Exact checks that the database at path holds exactly the sim's
// truth for q at the sim's clock: totals per currency and the row count
// against sim.Truth, and every row, field by field, against sim.Rows.
func Exact(t testing.TB, s *sim.Server, path string, q tally.UsageQuery) {
	t.Helper()
	truth := s.Truth(q)
	if truth.Rows == 0 || len(truth.Cost) == 0 {
		t.Fatalf("the truth of %s is empty: the test covers nothing", q.Window)
	}
	WithDB(t, path, func(db *sql.DB) {
		rows, _ := StoredQuery(t, db, q)
		if d := SameTotals(SumRows(rows), truth.Cost); d != "" {
			t.Errorf("%s: totals per currency differ from the truth: %s", q.Window, d)
		}
		if len(rows) != truth.Rows {
			t.Errorf("%s: %d rows stored, truth %d", q.Window, len(rows), truth.Rows)
		}
		if d := FirstDiff(RenderAll(rows), RenderAll(s.Rows(q))); d != "" {
			t.Errorf("%s: rows differ from the truth: %s", q.Window, d)
		}
	})
	NoDoubles(t, path)
}

// NoDoubles checks the ledger: no window recorded twice, and every
// usage row inside a window the ledger holds (a row no later load of its
// window would replace would be counted twice).
func NoDoubles(t testing.TB, path string) {
	t.Helper()
	WithDB(t, path, func(db *sql.DB) {
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

// NoToken fails when the token is in the bytes given.
func NoToken(t testing.TB, what string, b []byte) {
	t.Helper()
	if bytes.Contains(b, []byte(Token)) {
		t.Errorf("the token appears in %s", what)
	}
}

// Serve serves h on loopback for the test's lifetime and returns its
// base URL.
func Serve(t testing.TB, h http.Handler) string {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}
