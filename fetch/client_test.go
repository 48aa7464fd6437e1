package fetch

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tally-dev/tally"
	"github.com/tally-dev/tally/internal/secret"

	"github.com/rs/zerolog"
)

// testToken is distinctive so a leak is found by a plain search.
const testToken = "tok-S3CRET-5f3c9a1e77"

// sleepRecorder stands in for the retry timer: it records each delay and
// returns at once, or with the context's error when it is done.
type sleepRecorder struct {
	mu     sync.Mutex
	delays []time.Duration
}

func (s *sleepRecorder) sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.delays = append(s.delays, d)
	return nil
}

func (s *sleepRecorder) get() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Duration(nil), s.delays...)
}

// testPolicy is fast: the recorder replaces the timer.
func testPolicy(rec *sleepRecorder, attempts int) RetryPolicy {
	return RetryPolicy{MaxAttempts: attempts, BaseDelay: 100 * time.Millisecond, MaxDelay: 2 * time.Second, Sleep: rec.sleep}
}

// newTestClient builds a client for srv with a recording retry policy of 4
// attempts; opts come after and may replace it.
func newTestClient(t *testing.T, srv *httptest.Server, opts ...Option) (*Client, *sleepRecorder) {
	t.Helper()
	rec := &sleepRecorder{}
	all := append([]Option{WithHTTPClient(srv.Client()), WithRetry(testPolicy(rec, 4))}, opts...)
	c, err := NewClient(srv.URL, secret.New(testToken), all...)
	if err != nil {
		t.Fatal(err)
	}
	return c, rec
}

// collect drains a usage iterator; it stops at the first error.
func collect(seq func(func(tally.MeterData, error) bool)) ([]tally.MeterData, error) {
	var rows []tally.MeterData
	for md, err := range seq {
		if err != nil {
			return rows, err
		}
		rows = append(rows, md)
	}
	return rows, nil
}

// usageRow is the JSON of a distinct, valid MeterData row.
func usageRow(i int) map[string]any {
	return map[string]any{
		"date":          fmt.Sprintf("2026-10-%02dT00:00:00Z", i%28+1),
		"dateProcessed": nil,
		"meterName":     fmt.Sprintf("meter-%03d", i),
		"cost":          fmt.Sprintf("%d.%04d", i, i),
		"currency":      "USD",
		"quantity":      i,
		"project":       "alpha",
	}
}

func usageJSON(rows []map[string]any, next string) []byte {
	m := map[string]any{"value": rows, "supplemental": map[string]any{"records": len(rows)}}
	if next != "" {
		m["@odata.nextLink"] = next
	}
	b, _ := json.Marshal(m)
	return b
}

func rowsFrom(from, to int) []map[string]any {
	var rows []map[string]any
	for i := from; i < to; i++ {
		rows = append(rows, usageRow(i))
	}
	return rows
}

// checkRows asserts rows are exactly usageRow(from)…usageRow(to-1), in order.
func checkRows(t *testing.T, rows []tally.MeterData, from, to int) {
	t.Helper()
	if len(rows) != to-from {
		t.Fatalf("got %d rows, want %d", len(rows), to-from)
	}
	for i, r := range rows {
		n := from + i
		if r.MeterName != fmt.Sprintf("meter-%03d", n) || r.Cost.String() != fmt.Sprintf("%d.%04d", n, n) || r.Quantity != float64(n) {
			t.Fatalf("row %d = %s %s %v, want usage row %d", i, r.MeterName, r.Cost, r.Quantity, n)
		}
	}
}

func writeJSON(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(body)
}

func writeAPIError(w http.ResponseWriter, status int, code, detail, ref string) {
	b, _ := json.Marshal(map[string]any{
		"error":  map[string]any{"code": code, "detail": detail, "extraDetail": map[string]any{"hint": "h"}},
		"ref":    ref,
		"status": status,
	})
	writeJSON(w, status, b)
}

func window(t *testing.T, start, end string, g tally.Granularity) tally.Window {
	t.Helper()
	s, err := tally.ParseDate(start)
	if err != nil {
		t.Fatal(err)
	}
	e, err := tally.ParseDate(end)
	if err != nil {
		t.Fatal(err)
	}
	return tally.Window{Start: s, End: e, Granularity: g}
}

func TestNewClientBaseURL(t *testing.T) {
	tests := []struct {
		url     string
		ok      bool
		wantErr string
	}{
		{"https://app.mk.io", true, ""},
		{"https://app.mk.io/", true, ""},
		{"https://app.mk.io:8443/prefix", true, ""},
		{"HTTPS://app.mk.io", true, ""},
		{"http://127.0.0.1:8080", true, ""},
		{"http://127.9.8.7", true, ""},
		{"http://localhost:9", true, ""},
		{"http://LOCALHOST", true, ""},
		{"http://[::1]:8080", true, ""},
		{"http://app.mk.io", false, `"http://app.mk.io"`},
		{"http://10.0.0.1:8080", false, "loopback"},
		{"http://localhost.example.com", false, "loopback"},
		{"ftp://app.mk.io", false, `"ftp"`},
		{"app.mk.io", false, "no host"},
		{"", false, "no host"},
		{"https://", false, "no host"},
		{"https://app.mk.io?x=1", false, "query"},
		{"https://user:hunter2@app.mk.io", false, "user or password"},
		{"https://app.mk.io/%zz", false, "not a URL"},
	}
	for _, tt := range tests {
		t.Run(tt.url, func(t *testing.T) {
			c, err := NewClient(tt.url, secret.New(testToken))
			if tt.ok {
				if err != nil || c == nil {
					t.Fatalf("NewClient(%q): %v", tt.url, err)
				}
				return
			}
			if err == nil {
				t.Fatalf("NewClient(%q) accepted", tt.url)
			}
			if !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("error %q does not contain %q", err, tt.wantErr)
			}
			if strings.Contains(err.Error(), "hunter2") || strings.Contains(err.Error(), testToken) {
				t.Errorf("error leaks a credential: %q", err)
			}
		})
	}
}

func TestNewClientOptions(t *testing.T) {
	tests := []struct {
		name    string
		token   string
		opts    []Option
		wantErr []string
	}{
		{"empty token", " ", nil, []string{"token is empty"}},
		{"unknown path key", testToken, []Option{WithPaths(map[string]string{"usgae": "/x"})}, []string{`"usgae"`, "allowed keys", "usage", "rate_card", "project_usage"}},
		{"path without placeholder", testToken, []Option{WithPaths(map[string]string{"rate_card": "/api/v2/rateCard"})}, []string{"rate_card", `"/api/v2/rateCard"`, "{id}"}},
		{"path with a foreign placeholder", testToken, []Option{WithPaths(map[string]string{"usage": "/api/{org}/usage"})}, []string{"usage", "no placeholders"}},
		{"path that is a URL", testToken, []Option{WithPaths(map[string]string{"usage": "https://evil.example/usage"})}, []string{"usage", "starting with a single /"}},
		{"path relative to the scheme", testToken, []Option{WithPaths(map[string]string{"projects": "//evil.example/p"})}, []string{"projects", "single /"}},
		{"zero attempts", testToken, []Option{WithRetry(RetryPolicy{})}, []string{"MaxAttempts 0", "at least 1"}},
		{"negative delay", testToken, []Option{WithRetry(RetryPolicy{MaxAttempts: 2, BaseDelay: -time.Second})}, []string{"BaseDelay", "negative"}},
		{"nil http client", testToken, []Option{WithHTTPClient(nil)}, []string{"http client"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewClient("https://app.mk.io", secret.New(tt.token), tt.opts...)
			if err == nil {
				t.Fatal("NewClient accepted")
			}
			for _, s := range tt.wantErr {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not contain %q", err, s)
				}
			}
		})
	}
	// Valid overrides and a nil map are accepted.
	for _, paths := range []map[string]string{nil, {}, {"rate_card": "/api/v2/pm/{id}/card", "usage": "/api/v2/usage"}} {
		if _, err := NewClient("https://app.mk.io", secret.New(testToken), WithPaths(paths)); err != nil {
			t.Errorf("WithPaths(%v): %v", paths, err)
		}
	}
}

func TestDefaultRetry(t *testing.T) {
	p := DefaultRetry()
	if p.MaxAttempts != 9 || p.BaseDelay != 500*time.Millisecond || p.MaxDelay != time.Minute || p.MaxElapsed != 10*time.Minute {
		t.Errorf("DefaultRetry() = %+v", p)
	}
	n, err := RetryPolicy{MaxAttempts: 3}.normalize()
	if err != nil {
		t.Fatal(err)
	}
	if n.BaseDelay != p.BaseDelay || n.MaxDelay != p.MaxDelay || n.MaxElapsed != p.MaxElapsed || n.Sleep == nil {
		t.Errorf("zero durations not defaulted: %+v", n)
	}
}

// headerCapture records the headers and bodies of the requests it serves.
type headerCapture struct {
	mu   sync.Mutex
	reqs []capturedRequest
}

type capturedRequest struct {
	method, path string
	header       http.Header
	body         []byte
}

func (h *headerCapture) record(r *http.Request) capturedRequest {
	b, _ := io.ReadAll(r.Body)
	cr := capturedRequest{r.Method, r.URL.EscapedPath(), r.Header.Clone(), b}
	h.mu.Lock()
	h.reqs = append(h.reqs, cr)
	h.mu.Unlock()
	return cr
}

func (h *headerCapture) all() []capturedRequest {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]capturedRequest(nil), h.reqs...)
}

func TestRequestHeadersAndBody(t *testing.T) {
	hc := &headerCapture{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hc.record(r)
		switch r.URL.Path {
		case tally.DefaultPaths["usage"]:
			writeJSON(w, 200, usageJSON(nil, ""))
		case tally.DefaultPaths["projects"]:
			writeJSON(w, 200, []byte(`{"value":[]}`))
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	c, _ := newTestClient(t, srv, WithUserAgent("1.2.3"))
	w := window(t, "2026-10-01", "2026-11-01", tally.Hour)
	if _, err := collect(c.Usage(context.Background(), tally.UsageQuery{Window: w, ReportedDate: true,
		ProjectNames: []string{"alpha", "beta"}, MeterNames: []string{"m1"}})); err != nil {
		t.Fatal(err)
	}
	if _, err := collect(c.Usage(context.Background(), tally.UsageQuery{Window: w, Format: tally.FormatCSV, PaymentMethodIDs: []string{"pm-1"}})); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Projects(context.Background()); err != nil {
		t.Fatal(err)
	}
	dflt, _ := newTestClient(t, srv)
	if _, err := dflt.Projects(context.Background()); err != nil {
		t.Fatal(err)
	}

	reqs := hc.all()
	if len(reqs) != 4 {
		t.Fatalf("%d requests, want 4", len(reqs))
	}
	wantBodies := []string{
		`{"startDate":"2026-10-01","endDate":"2026-11-01","granularity":"hour","format":"json","filterOnReportedDate":true,"groupBy":["meter"],"projectNames":["alpha","beta"],"meterNames":["m1"]}`,
		`{"startDate":"2026-10-01","endDate":"2026-11-01","granularity":"hour","format":"csv","filterOnReportedDate":false,"groupBy":["meter"],"paymentMethodIds":["pm-1"]}`,
		``, ``,
	}
	wantAccept := []string{"application/json", "text/csv, application/json", "application/json", "application/json"}
	wantMethod := []string{"POST", "POST", "GET", "GET"}
	wantUA := []string{"tally/1.2.3", "tally/1.2.3", "tally/1.2.3", "tally/dev"}
	for i, r := range reqs {
		if r.method != wantMethod[i] {
			t.Errorf("request %d: method %s, want %s", i, r.method, wantMethod[i])
		}
		if got := r.header.Get("Authorization"); got != "Bearer "+testToken {
			t.Errorf("request %d: Authorization %q", i, got)
		}
		if got := r.header.Get("Accept"); got != wantAccept[i] {
			t.Errorf("request %d: Accept %q, want %q", i, got, wantAccept[i])
		}
		if got := r.header.Get("User-Agent"); got != wantUA[i] {
			t.Errorf("request %d: User-Agent %q, want %q", i, got, wantUA[i])
		}
		ct := r.header.Get("Content-Type")
		if wantBodies[i] != "" && ct != "application/json" || wantBodies[i] == "" && ct != "" {
			t.Errorf("request %d: Content-Type %q with body %q", i, ct, r.body)
		}
		if string(r.body) != wantBodies[i] {
			t.Errorf("request %d: body\n%s\nwant\n%s", i, r.body, wantBodies[i])
		}
	}
}

func TestUsageQueryRefusedBeforeSending(t *testing.T) {
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		writeJSON(w, 200, usageJSON(nil, ""))
	}))
	defer srv.Close()
	c, _ := newTestClient(t, srv)
	ok := window(t, "2026-10-01", "2026-11-01", tally.Day)
	tests := []struct {
		name    string
		q       tally.UsageQuery
		wantErr []string
	}{
		{"both filters", tally.UsageQuery{Window: ok, ProjectNames: []string{"a"}, PaymentMethodIDs: []string{"b"}}, []string{"mutually exclusive", `"a"`, `"b"`}},
		{"hour window too long", tally.UsageQuery{Window: window(t, "2026-10-01", "2026-12-01", tally.Hour)}, []string{"2026-10-01..2026-12-01", "no later than 2026-11-01"}},
		{"empty window", tally.UsageQuery{Window: window(t, "2026-10-01", "2026-10-01", tally.Day)}, []string{"end must be after start"}},
		{"month window off boundary", tally.UsageQuery{Window: window(t, "2026-10-02", "2026-11-01", tally.Month)}, []string{"month boundaries"}},
		{"bad granularity", tally.UsageQuery{Window: tally.Window{Start: ok.Start, End: ok.End, Granularity: "minute"}}, []string{`"minute"`}},
		{"bad format", tally.UsageQuery{Window: ok, Format: "xml"}, []string{`"xml"`, "json or csv"}},
		{"empty project name", tally.UsageQuery{Window: ok, ProjectNames: []string{"a", ""}}, []string{"project names", "entry 2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := collect(c.Usage(context.Background(), tt.q))
			if err == nil {
				t.Fatal("query accepted")
			}
			for _, s := range tt.wantErr {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not contain %q", err, s)
				}
			}
		})
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("%d requests sent for refused queries", n)
	}
}

// Each documented error status surfaces as an *APIError with the Error
// body's code, detail and ref; 429 and 500 are retried first.
func TestAPIErrorStatuses(t *testing.T) {
	tests := []struct {
		status   int
		code     string
		attempts int64
	}{
		{400, "InvalidRange", 1},
		{401, "Unauthorized", 1},
		{403, "Forbidden", 1},
		{404, "NotFound", 1},
		{429, "TooManyRequests", 3},
		{500, "InternalError", 3},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.status), func(t *testing.T) {
			var hits atomic.Int64
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				hits.Add(1)
				writeAPIError(w, tt.status, tt.code, "detail of "+tt.code, "ref-"+tt.code)
			}))
			defer srv.Close()
			rec := &sleepRecorder{}
			c, _ := newTestClient(t, srv, WithRetry(testPolicy(rec, 3)))

			// A one-day window cannot be split: a 400 surfaces too.
			_, uerr := collect(c.Usage(context.Background(), tally.UsageQuery{Window: window(t, "2026-10-01", "2026-10-02", tally.Day)}))
			_, oerr := c.Organization(context.Background())
			_, lerr := c.PaymentMethods(context.Background())
			for i, err := range []error{uerr, oerr, lerr} {
				var ae *APIError
				if !errors.As(err, &ae) {
					t.Fatalf("call %d: %v is not an *APIError", i, err)
				}
				if ae.Status != tt.status || ae.Code != tt.code || ae.Detail != "detail of "+tt.code || ae.Ref != "ref-"+tt.code {
					t.Errorf("call %d: APIError %+v", i, ae)
				}
				if ae.ExtraDetail["hint"] != "h" {
					t.Errorf("call %d: extraDetail %v", i, ae.ExtraDetail)
				}
				if ae.URL == "" || ae.Method == "" || strings.Contains(ae.URL, "?") {
					t.Errorf("call %d: method %q url %q", i, ae.Method, ae.URL)
				}
				for _, s := range []string{fmt.Sprint(tt.status), tt.code, "detail of " + tt.code, "ref-" + tt.code} {
					if !strings.Contains(err.Error(), s) {
						t.Errorf("call %d: error %q does not contain %q", i, err, s)
					}
				}
				if Retryable(ae) != (tt.attempts > 1) {
					t.Errorf("Retryable(%d) = %v", tt.status, Retryable(ae))
				}
			}
			if got, want := hits.Load(), 3*tt.attempts; got != want {
				t.Errorf("%d requests, want %d", got, want)
			}
		})
	}
}

func TestAPIErrorNonJSONBody(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(http.StatusBadGateway)
		io.WriteString(w, "<html>\n  <body>Bad   gateway from the proxy</body>\n</html>"+strings.Repeat("x", 1000))
	}))
	defer srv.Close()
	c, _ := newTestClient(t, srv, WithRetry(RetryPolicy{MaxAttempts: 1}))
	_, err := c.Organization(context.Background())
	var ae *APIError
	if !errors.As(err, &ae) {
		t.Fatalf("%v is not an *APIError", err)
	}
	if ae.Status != 502 || ae.Code != "" || ae.Ref != "" {
		t.Errorf("APIError %+v", ae)
	}
	if !strings.HasPrefix(ae.Detail, "<html> <body>Bad gateway from the proxy</body> </html>xxx") || len(ae.Detail) > 210 {
		t.Errorf("Detail %q", ae.Detail)
	}
	if !strings.Contains(err.Error(), "GET /api/v1/organization: 502 Bad Gateway: <html>") {
		t.Errorf("error %q", err)
	}
}

func TestAPIErrorString(t *testing.T) {
	e := &APIError{Status: 400, Code: "InvalidRange", Detail: "range too long", Ref: "3f2a", Method: "POST",
		URL: "https://app.mk.io/api/v1/organization/reports/usage"}
	if got, want := e.Error(), "POST /api/v1/organization/reports/usage: 400 InvalidRange: range too long (ref 3f2a)"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	e = &APIError{Status: 503, Method: "GET", URL: "https://app.mk.io/api/v1/projects"}
	if got, want := e.Error(), "GET /api/v1/projects: 503 Service Unavailable"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}

// The token must not appear in any error or log line, whatever fails: a
// server echoing the request, retries, a refused next link, a dead server.
func TestTokenNeverLeaks(t *testing.T) {
	var logs bytes.Buffer
	log := zerolog.New(&logs).Level(zerolog.DebugLevel)
	var errs []error

	echo := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case tally.DefaultPaths["organization"]:
			writeAPIError(w, 401, "Unauthorized", "bad token "+r.Header.Get("Authorization"), r.Header.Get("Authorization"))
		case tally.DefaultPaths["projects"]:
			w.WriteHeader(500)
			fmt.Fprintf(w, "crash; headers were %v", r.Header)
		case tally.DefaultPaths["locations"]:
			writeJSON(w, 200, []byte(`{"value":[],"@odata.nextLink":"https://elsewhere.example/?t=`+testToken+`"}`))
		case tally.DefaultPaths["usage"]:
			w.Header().Set("Retry-After", "1")
			writeAPIError(w, 429, "TooMany", "slow down "+r.Header.Get("Authorization"), "r")
		}
	}))
	defer echo.Close()
	c, _ := newTestClient(t, echo, WithLogger(log), WithRetry(RetryPolicy{MaxAttempts: 3, Sleep: (&sleepRecorder{}).sleep}))
	ctx := context.Background()
	_, err := c.Organization(ctx)
	errs = append(errs, err)
	_, err = c.Projects(ctx)
	errs = append(errs, err)
	_, err = c.Locations(ctx)
	errs = append(errs, err)
	_, err = collect(c.Usage(ctx, tally.UsageQuery{Window: window(t, "2026-10-01", "2026-10-02", tally.Day)}))
	errs = append(errs, err)
	err = c.Retry(ctx, func(ctx context.Context) error { return fmt.Errorf("%w: by hand", ErrTruncated) })
	errs = append(errs, err)

	dead := httptest.NewServer(http.NotFoundHandler())
	deadURL := dead.URL
	dead.Close()
	dc, err := NewClient(deadURL, secret.New(testToken), WithLogger(log), WithRetry(RetryPolicy{MaxAttempts: 2, Sleep: (&sleepRecorder{}).sleep}))
	if err != nil {
		t.Fatal(err)
	}
	_, err = dc.Organization(ctx)
	errs = append(errs, err)
	if _, err := NewClient("http://example.com", secret.New(testToken)); err != nil {
		errs = append(errs, err)
	}

	for i, err := range errs {
		if err == nil {
			t.Fatalf("call %d did not fail", i)
		}
		if strings.Contains(err.Error(), testToken) || strings.Contains(fmt.Sprintf("%+v", err), testToken) {
			t.Errorf("call %d: error leaks the token: %v", i, err)
		}
		var ae *APIError
		if errors.As(err, &ae) && strings.Contains(fmt.Sprint(ae.ExtraDetail, ae.Ref, ae.URL), testToken) {
			t.Errorf("call %d: APIError fields leak the token: %+v", i, ae)
		}
	}
	out := logs.String()
	if !strings.Contains(out, `"level":"debug"`) || !strings.Contains(out, `"level":"warn"`) || !strings.Contains(out, "retrying") {
		t.Fatalf("logs lack the debug and warn lines that were to be checked:\n%s", out)
	}
	if strings.Contains(out, testToken) || strings.Contains(out, "S3CRET") {
		t.Errorf("logs leak the token:\n%s", out)
	}
}

// A redirect is followed only within the base URL's origin, whether the
// client's HTTP client is its own or the caller's.
func TestRedirectsStayOnOrigin(t *testing.T) {
	var otherHits atomic.Int64
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		otherHits.Add(1)
		writeJSON(w, 200, []byte(`{"metadata":{"id":"evil"}}`))
	}))
	defer other.Close()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/api/v1/organization":
			http.Redirect(w, r, "/moved/organization", http.StatusFound)
		case "/moved/organization":
			writeJSON(w, 200, []byte(`{"metadata":{"id":"org-1"},"spec":{"name":"Acme"}}`))
		case "/api/v1/projects":
			http.Redirect(w, r, other.URL+"/api/v1/projects", http.StatusFound)
		}
	}))
	defer srv.Close()
	callers := &http.Client{Timeout: 5 * time.Second}
	for name, opts := range map[string][]Option{
		"own http client":      {WithRetry(RetryPolicy{MaxAttempts: 1})},
		"caller's http client": {WithRetry(RetryPolicy{MaxAttempts: 1}), WithHTTPClient(callers)},
	} {
		t.Run(name, func(t *testing.T) {
			c, err := NewClient(srv.URL, secret.New(testToken), opts...)
			if err != nil {
				t.Fatal(err)
			}
			org, err := c.Organization(context.Background())
			if err != nil || org.ID != "org-1" {
				t.Errorf("same-origin redirect: %+v, %v", org, err)
			}
			_, err = c.Projects(context.Background())
			if err == nil || !strings.Contains(err.Error(), "not the base url's origin") {
				t.Errorf("foreign redirect: %v", err)
			}
		})
	}
	if callers.CheckRedirect != nil {
		t.Error("the caller's http client was changed")
	}
	if otherHits.Load() != 0 {
		t.Errorf("%d requests reached the other origin", otherHits.Load())
	}
}
