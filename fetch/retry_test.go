package fetch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/tally-dev/tally"
	"github.com/tally-dev/tally/internal/secret"
)

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 10, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		in   string
		want time.Duration
	}{
		{"", 0},
		{"3", 3 * time.Second},
		{" 7 ", 7 * time.Second},
		{"0", 0},
		{"-5", 0},
		{"1.5", 0},
		{"soon", 0},
		{"99999999999999999999", 0},
		{"999999999", 24 * time.Hour},
		{now.Add(30 * time.Second).Format(http.TimeFormat), 30 * time.Second},
		{now.Add(-30 * time.Second).Format(http.TimeFormat), 0},
		{now.Format(http.TimeFormat), 0},
		{now.Add(90 * time.Second).Format(time.RFC850), 90 * time.Second},
	}
	for _, tt := range tests {
		if got := parseRetryAfter(tt.in, now); got != tt.want {
			t.Errorf("parseRetryAfter(%q) = %s, want %s", tt.in, got, tt.want)
		}
	}
}

// The first request is refused with status and Retry-After; the second
// succeeds. The one recorded delay is the Retry-After when it is positive
// (capped at MaxDelay) and the backoff otherwise, never zero.
func TestRetryAfterHonoured(t *testing.T) {
	const base, maxDelay = 100 * time.Millisecond, 60 * time.Second
	backoff := func(d time.Duration) bool { return d >= base/2 && d <= base }
	tests := []struct {
		name   string
		status int
		header func() string // "" = no header
		ok     func(d time.Duration) bool
	}{
		{"seconds", 429, func() string { return "3" }, func(d time.Duration) bool { return d == 3*time.Second }},
		{"seconds on 503", 503, func() string { return "2" }, func(d time.Duration) bool { return d == 2*time.Second }},
		{"seconds over the cap", 429, func() string { return "600" }, func(d time.Duration) bool { return d == maxDelay }},
		{"http date", 429, func() string { return time.Now().Add(30 * time.Second).UTC().Format(http.TimeFormat) },
			func(d time.Duration) bool { return d > 27*time.Second && d <= 30*time.Second }},
		{"http date in the past", 429, func() string { return time.Now().Add(-time.Hour).UTC().Format(http.TimeFormat) }, backoff},
		{"zero", 429, func() string { return "0" }, backoff},
		{"negative", 429, func() string { return "-5" }, backoff},
		{"unparsable", 503, func() string { return "later" }, backoff},
		{"absent", 429, func() string { return "" }, backoff},
		{"absent on 500", 500, func() string { return "" }, backoff},
		{"absent on 502", 502, func() string { return "" }, backoff},
		{"absent on 504", 504, func() string { return "" }, backoff},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var hits atomic.Int64
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if hits.Add(1) == 1 {
					if h := tt.header(); h != "" {
						w.Header().Set("Retry-After", h)
					}
					writeAPIError(w, tt.status, "Busy", "try later", "r1")
					return
				}
				writeJSON(w, 200, []byte(`{"metadata":{"id":"org-1"},"spec":{"name":"Acme"}}`))
			}))
			defer srv.Close()
			rec := &sleepRecorder{}
			c, _ := newTestClient(t, srv, WithRetry(RetryPolicy{MaxAttempts: 3, BaseDelay: base, MaxDelay: maxDelay, Sleep: rec.sleep}))
			org, err := c.Organization(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if org.Name != "Acme" || hits.Load() != 2 {
				t.Fatalf("org %+v after %d requests", org, hits.Load())
			}
			d := rec.get()
			if len(d) != 1 || !tt.ok(d[0]) {
				t.Errorf("delays %v", d)
			}
		})
	}
}

func TestMaxAttemptsCap(t *testing.T) {
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		writeAPIError(w, 503, "Unavailable", "down", "r")
	}))
	defer srv.Close()
	rec := &sleepRecorder{}
	c, _ := newTestClient(t, srv, WithRetry(RetryPolicy{MaxAttempts: 5, BaseDelay: 100 * time.Millisecond, MaxDelay: 300 * time.Millisecond, Sleep: rec.sleep}))
	stats := &tally.Stats{}
	_, err := collect(c.Usage(context.Background(), tally.UsageQuery{Window: window(t, "2026-10-01", "2026-11-01", tally.Day), Stats: stats}))
	var ae *APIError
	if !errors.As(err, &ae) || ae.Status != 503 {
		t.Fatalf("err = %v, want the 503", err)
	}
	if !strings.Contains(err.Error(), "give up after 5 attempts") {
		t.Errorf("error %q does not say the attempts were spent", err)
	}
	if hits.Load() != 5 || stats.Requests.Load() != 5 || stats.Retries.Load() != 4 {
		t.Errorf("hits %d requests %d retries %d, want 5 5 4", hits.Load(), stats.Requests.Load(), stats.Retries.Load())
	}
	delays := rec.get()
	if len(delays) != 4 {
		t.Fatalf("delays %v", delays)
	}
	ceils := []time.Duration{100, 200, 300, 300}
	for i, d := range delays {
		if d < 50*time.Millisecond || d > ceils[i]*time.Millisecond {
			t.Errorf("delay %d = %s, want in [50ms, %dms]", i+1, d, ceils[i])
		}
	}
}

func TestMaxElapsedCap(t *testing.T) {
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Header().Set("Retry-After", "60")
		writeAPIError(w, 429, "TooMany", "slow down", "r")
	}))
	defer srv.Close()
	rec := &sleepRecorder{}
	c, _ := newTestClient(t, srv, WithRetry(RetryPolicy{MaxAttempts: 10, MaxDelay: time.Minute, MaxElapsed: 150 * time.Second, Sleep: rec.sleep}))
	_, err := c.Projects(context.Background())
	var ae *APIError
	if !errors.As(err, &ae) || ae.Status != 429 || ae.RetryAfter != time.Minute {
		t.Fatalf("err = %v", err)
	}
	if !strings.Contains(err.Error(), "give up after 3 attempts (retry time limit 2m30s reached)") {
		t.Errorf("error %q does not say the time limit ran out", err)
	}
	// 60s + 60s fit in 150s; a third wait would not.
	if hits.Load() != 3 || fmt.Sprint(rec.get()) != "[1m0s 1m0s]" {
		t.Errorf("hits %d delays %v", hits.Load(), rec.get())
	}
}

// A cancel during a backoff returns the context's error at once, with the
// real timer.
func TestRetryStopsOnCancel(t *testing.T) {
	for _, header := range []string{"", "3600"} {
		t.Run("retry-after "+header, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var hits atomic.Int64
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				hits.Add(1)
				if header != "" {
					w.Header().Set("Retry-After", header)
				}
				writeAPIError(w, 503, "Unavailable", "down", "r")
				time.AfterFunc(20*time.Millisecond, cancel)
			}))
			defer srv.Close()
			c, err := NewClient(srv.URL, secret.New(testToken), WithHTTPClient(srv.Client()),
				WithRetry(RetryPolicy{MaxAttempts: 5, BaseDelay: time.Hour, MaxDelay: time.Hour, MaxElapsed: 10 * time.Hour}))
			if err != nil {
				t.Fatal(err)
			}
			_, err = c.Locations(ctx)
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("err = %v, want context.Canceled", err)
			}
			if hits.Load() != 1 {
				t.Errorf("%d requests", hits.Load())
			}
		})
	}
}

type timeoutErr struct{}

func (timeoutErr) Error() string   { return "i/o timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }

func TestRetryable(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"truncated", ErrTruncated, true},
		{"wrapped truncated", fmt.Errorf("row 3: %w", fmt.Errorf("%w: %w", ErrTruncated, io.ErrUnexpectedEOF)), true},
		{"body stalled and cancelled by the transport", fmt.Errorf("%w: %w", ErrTruncated, context.Canceled), true},
		{"cancelled", context.Canceled, false},
		{"wrapped cancelled", fmt.Errorf("fetch: %w", context.Canceled), false},
		{"429", &APIError{Status: 429}, true},
		{"500", &APIError{Status: 500}, true},
		{"502", &APIError{Status: 502}, true},
		{"503", &APIError{Status: 503}, true},
		{"504", &APIError{Status: 504}, true},
		{"wrapped 503", fmt.Errorf("x: %w", &APIError{Status: 503}), true},
		{"400", &APIError{Status: 400}, false},
		{"401", &APIError{Status: 401}, false},
		{"403", &APIError{Status: 403}, false},
		{"404", &APIError{Status: 404}, false},
		{"405", &APIError{Status: 405}, false},
		{"501", &APIError{Status: 501}, false},
		{"refused", &transportError{"GET", "u", fmt.Errorf("dial: %w", syscall.ECONNREFUSED)}, true},
		{"reset", &transportError{"GET", "u", fmt.Errorf("read: %w", syscall.ECONNRESET)}, true},
		{"closed before answer", &transportError{"GET", "u", io.EOF}, true},
		{"timeout", &transportError{"GET", "u", timeoutErr{}}, true},
		{"plain", errors.New("boom"), false},
		{"bad row", &fieldError{field: "cost", msg: "bad"}, false},
		{"bad shape", shapef("not an object"), false},
	}
	for _, tt := range tests {
		if got := Retryable(tt.err); got != tt.want {
			t.Errorf("%s: Retryable(%v) = %v, want %v", tt.name, tt.err, got, tt.want)
		}
	}
}

func TestBackoffBounds(t *testing.T) {
	p, err := RetryPolicy{MaxAttempts: 20, BaseDelay: 500 * time.Millisecond, MaxDelay: 60 * time.Second}.normalize()
	if err != nil {
		t.Fatal(err)
	}
	for n := 1; n <= 20; n++ {
		ceil := min(p.BaseDelay<<(n-1), p.MaxDelay)
		if n > 10 {
			ceil = p.MaxDelay
		}
		distinct := map[time.Duration]bool{}
		for range 200 {
			d := p.backoff(n)
			if d < p.BaseDelay/2 || d > ceil {
				t.Fatalf("backoff(%d) = %s, want in [%s, %s]", n, d, p.BaseDelay/2, ceil)
			}
			distinct[d] = true
		}
		if len(distinct) < 50 {
			t.Errorf("backoff(%d): %d distinct values in 200: not jittered", n, len(distinct))
		}
	}
}

func TestClientRetry(t *testing.T) {
	truncated := fmt.Errorf("fetch usage: row 9: %w", ErrTruncated)
	tests := []struct {
		name      string
		errs      []error // returned by successive calls; nil after the list
		wantCalls int
		wantErr   error
		delays    []time.Duration // exact, when set
	}{
		{"succeeds after two cuts", []error{truncated, truncated}, 3, nil, nil},
		{"not retryable", []error{errors.New("disk full")}, 1, nil, nil},
		{"budget already spent", []error{&exhaustedError{attempts: 9, err: &APIError{Status: 503}}}, 1, nil, nil},
		{"retry-after honoured", []error{&APIError{Status: 429, RetryAfter: 1500 * time.Millisecond}}, 2, nil, []time.Duration{1500 * time.Millisecond}},
		{"gives up at max attempts", []error{truncated, truncated, truncated, truncated, truncated}, 4, ErrTruncated, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := &sleepRecorder{}
			c, err := NewClient("https://app.mk.io", secret.New(testToken), WithRetry(testPolicy(rec, 4)))
			if err != nil {
				t.Fatal(err)
			}
			calls := 0
			err = c.Retry(context.Background(), func(ctx context.Context) error {
				calls++
				if calls <= len(tt.errs) {
					return tt.errs[calls-1]
				}
				return nil
			})
			if calls != tt.wantCalls {
				t.Errorf("%d calls, want %d", calls, tt.wantCalls)
			}
			switch {
			case tt.wantErr != nil:
				if !errors.Is(err, tt.wantErr) {
					t.Errorf("err = %v, want %v", err, tt.wantErr)
				}
			case calls <= len(tt.errs):
				if err != tt.errs[len(tt.errs)-1] {
					t.Errorf("err = %v, want %v as is", err, tt.errs[len(tt.errs)-1])
				}
			case err != nil:
				t.Errorf("err = %v", err)
			}
			if len(rec.get()) != calls-1 {
				t.Errorf("delays %v after %d calls", rec.get(), calls)
			}
			if tt.delays != nil && fmt.Sprint(rec.get()) != fmt.Sprint(tt.delays) {
				t.Errorf("delays %v, want %v", rec.get(), tt.delays)
			}
		})
	}
	t.Run("cancelled inside fn", func(t *testing.T) {
		c, _ := NewClient("https://app.mk.io", secret.New(testToken), WithRetry(testPolicy(&sleepRecorder{}, 4)))
		ctx, cancel := context.WithCancel(context.Background())
		calls := 0
		err := c.Retry(ctx, func(ctx context.Context) error {
			calls++
			cancel()
			return fmt.Errorf("%w: read interrupted", ErrTruncated)
		})
		if !errors.Is(err, context.Canceled) || calls != 1 {
			t.Errorf("err %v after %d calls", err, calls)
		}
	})
}

// Failures without an answer are retried: a dead server (connection
// refused), a connection closed before the answer, a client timeout.
func TestTransportFailuresRetried(t *testing.T) {
	dead := httptest.NewServer(http.NotFoundHandler())
	deadURL := dead.URL
	dead.Close()
	c, err := NewClient(deadURL, secret.New(testToken), WithRetry(testPolicy(&sleepRecorder{}, 3)))
	if err != nil {
		t.Fatal(err)
	}
	stats := &tally.Stats{}
	_, err = collect(c.Usage(context.Background(), tally.UsageQuery{Window: window(t, "2026-10-01", "2026-11-01", tally.Day), Stats: stats}))
	if !errors.Is(err, syscall.ECONNREFUSED) || !strings.Contains(err.Error(), "give up after 3 attempts") || stats.Requests.Load() != 3 {
		t.Errorf("dead server: err %v after %d requests", err, stats.Requests.Load())
	}

	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch hits.Add(1) {
		case 1: // hang up without a word
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.Close()
			}
			return
		case 2: // too slow for the client's timeout
			io.Copy(io.Discard, r.Body) // so the server notices the client leave
			select {
			case <-r.Context().Done():
			case <-time.After(5 * time.Second):
			}
			return
		}
		writeJSON(w, 200, usageJSON(rowsFrom(0, 4), ""))
	}))
	defer srv.Close()
	hc := srv.Client()
	hc.Timeout = 200 * time.Millisecond
	c, _ = newTestClient(t, srv, WithHTTPClient(hc))
	rows, err := collect(c.Usage(context.Background(), tally.UsageQuery{Window: window(t, "2026-10-01", "2026-11-01", tally.Day)}))
	if err != nil {
		t.Fatal(err)
	}
	checkRows(t, rows, 0, 4)
	if hits.Load() != 3 {
		t.Errorf("%d requests, want 3", hits.Load())
	}
}

// A port nothing listens on fails after api.connect_retries, naming the
// address; once the interface has answered, a refused connection is given
// the full retry policy (a restart, not a wrong address).
func TestConnectRetriesBeforeTheFirstAnswer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now

	var sleeps int
	policy := RetryPolicy{MaxAttempts: 9, Sleep: func(context.Context, time.Duration) error { sleeps++; return nil }}
	c, err := NewClient("http://"+addr, secret.New(testToken), WithRetry(policy), WithConnectRetries(2))
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Organization(context.Background())
	var ue *UnreachableError
	if !errors.As(err, &ue) || ue.Attempts != 3 || !strings.Contains(err.Error(), addr) || !strings.Contains(err.Error(), "api.base_url") {
		t.Fatalf("error %v (%T), want an *UnreachableError after 3 attempts naming %s", err, err, addr)
	}
	if sleeps != 2 || c.Requests() != 3 || c.Retries() != 2 {
		t.Errorf("sleeps %d, requests %d, retries %d; want 2, 3, 2", sleeps, c.Requests(), c.Retries())
	}

	// Answered once, then gone: the whole policy.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"kind":"Organization","metadata":{"id":"0f8fad5b-d9cb-469f-a165-70867728950e"},"spec":{"name":"x"}}`)
	}))
	sleeps = 0
	c, err = NewClient(srv.URL, secret.New(testToken), WithRetry(policy), WithConnectRetries(2))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Organization(context.Background()); err != nil {
		t.Fatal(err)
	}
	srv.Close()
	_, err = c.Organization(context.Background())
	if errors.As(err, &ue) || sleeps != 8 {
		t.Errorf("after an answer: %v with %d retries; want the full policy (8 retries), not unreachable", err, sleeps)
	}
}
