package fetch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tally-dev/tally"
)

// pagedUsage serves usage rows 0..14 in three pages of five. Page 2 puts its
// next link before its value, and that link is relative.
type pagedUsage struct {
	mu      sync.Mutex
	methods []string
	bodies  []string
	bytes   atomic.Int64
	url     string // the server's own URL, for absolute links
	// status, when set, answers a request for page p (1-based) with a method.
	status func(page int, method string) int
}

func (s *pagedUsage) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	cr := (&headerCapture{}).record(r)
	page := 1
	fmt.Sscan(r.URL.Query().Get("$skiptoken"), &page)
	s.mu.Lock()
	s.methods = append(s.methods, fmt.Sprintf("%s %d", r.Method, page))
	s.bodies = append(s.bodies, string(cr.body))
	s.mu.Unlock()
	if s.status != nil {
		if st := s.status(page, r.Method); st != 0 {
			writeAPIError(w, st, "Nope", "refused", "ref-1")
			return
		}
	}
	rows, _ := json.Marshal(rowsFrom((page-1)*5, page*5))
	var body string
	switch page {
	case 1:
		body = `{"value":` + string(rows) + `,"supplemental":{"records":5},"@odata.nextLink":"` + s.url + r.URL.Path + `?$skiptoken=2"}`
	case 2:
		body = `{"@odata.nextLink":"` + r.URL.Path + `?$skiptoken=3","supplemental":{"records":5},"value":` + string(rows) + `}`
	default:
		body = `{"supplemental":{"records":5},"value":` + string(rows) + `}`
	}
	w.Header().Set("Content-Type", "application/json")
	n, _ := w.Write([]byte(body))
	s.bytes.Add(int64(n))
}

func (s *pagedUsage) calls() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.methods...)
}

func newPagedUsage(t *testing.T) (*pagedUsage, *httptest.Server) {
	s := &pagedUsage{}
	srv := httptest.NewServer(s)
	s.url = srv.URL
	t.Cleanup(srv.Close)
	return s, srv
}

func TestUsageThreePages(t *testing.T) {
	s, srv := newPagedUsage(t)
	c, _ := newTestClient(t, srv)
	stats := &tally.Stats{}
	rows, err := collect(c.Usage(context.Background(), tally.UsageQuery{Window: window(t, "2026-10-01", "2026-11-01", tally.Day), Stats: stats}))
	if err != nil {
		t.Fatal(err)
	}
	checkRows(t, rows, 0, 15)
	if got := strings.Join(s.calls(), ","); got != "POST 1,POST 2,POST 3" {
		t.Errorf("requests %s", got)
	}
	// The next links get the same query body: a server that needs it has it.
	for i, b := range s.bodies {
		if b != s.bodies[0] || !strings.Contains(b, `"startDate":"2026-10-01"`) {
			t.Errorf("request %d body %s, want %s", i+1, b, s.bodies[0])
		}
	}
	if stats.Requests.Load() != 3 || stats.Retries.Load() != 0 || stats.Bytes.Load() != s.bytes.Load() {
		t.Errorf("stats: requests %d retries %d bytes %d (served %d)", stats.Requests.Load(), stats.Retries.Load(), stats.Bytes.Load(), s.bytes.Load())
	}
}

// A server that refuses a POST of its next link gets a GET of it, and of
// every later link.
func TestUsageNextLink405FallsBackToGET(t *testing.T) {
	s, srv := newPagedUsage(t)
	s.status = func(page int, method string) int {
		if page > 1 && method == http.MethodPost {
			return http.StatusMethodNotAllowed
		}
		return 0
	}
	c, rec := newTestClient(t, srv)
	stats := &tally.Stats{}
	rows, err := collect(c.Usage(context.Background(), tally.UsageQuery{Window: window(t, "2026-10-01", "2026-11-01", tally.Day), Stats: stats}))
	if err != nil {
		t.Fatal(err)
	}
	checkRows(t, rows, 0, 15)
	if got := strings.Join(s.calls(), ","); got != "POST 1,POST 2,GET 2,GET 3" {
		t.Errorf("requests %s", got)
	}
	if len(rec.get()) != 0 || stats.Retries.Load() != 0 {
		t.Errorf("a 405 fallback is not a retry: delays %v, retries %d", rec.get(), stats.Retries.Load())
	}
}

func TestUsageConsumerStopsEarly(t *testing.T) {
	s, srv := newPagedUsage(t)
	c, _ := newTestClient(t, srv)
	n := 0
	for _, err := range c.Usage(context.Background(), tally.UsageQuery{Window: window(t, "2026-10-01", "2026-11-01", tally.Day)}) {
		if err != nil {
			t.Fatal(err)
		}
		if n++; n == 2 {
			break
		}
	}
	if got := strings.Join(s.calls(), ","); got != "POST 1" {
		t.Errorf("requests after the consumer stopped: %s", got)
	}
}

// A next link seen before in the same listing is a loop: an error, after
// the rows of the pages before it.
func TestUsageLoopGuard(t *testing.T) {
	for _, tt := range []struct{ name, link string }{
		{"links to itself", "?$skiptoken=2"},
		{"links to the first page", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var hits atomic.Int64
			var srv *httptest.Server
			srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				hits.Add(1)
				page := 1
				fmt.Sscan(r.URL.Query().Get("$skiptoken"), &page)
				next := srv.URL + tally.DefaultPaths["usage"] + "?$skiptoken=2"
				if page == 2 {
					next = srv.URL + tally.DefaultPaths["usage"] + tt.link
				}
				writeJSON(w, 200, usageJSON(rowsFrom((page-1)*2, page*2), next))
			}))
			defer srv.Close()
			c, _ := newTestClient(t, srv)
			rows, err := collect(c.Usage(context.Background(), tally.UsageQuery{Window: window(t, "2026-10-01", "2026-11-01", tally.Day)}))
			if err == nil || !strings.Contains(err.Error(), "already followed") || !strings.Contains(err.Error(), "2026-10-01..2026-11-01") {
				t.Fatalf("err = %v, want a loop error naming the window", err)
			}
			if Retryable(err) {
				t.Errorf("a paging loop must not be retried: %v", err)
			}
			checkRows(t, rows, 0, 4)
			if hits.Load() != 2 {
				t.Errorf("%d requests, want 2", hits.Load())
			}
		})
	}
}

// A next link to another origin is refused and nothing is sent there: the
// token goes nowhere but the base URL's origin.
func TestUsageForeignNextLinkRefused(t *testing.T) {
	var otherHits atomic.Int64
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		otherHits.Add(1)
		writeJSON(w, 200, usageJSON(nil, ""))
	}))
	defer other.Close()
	var hits atomic.Int64
	var link atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		writeJSON(w, 200, usageJSON(rowsFrom(0, 3), link.Load().(string)))
	}))
	defer srv.Close()
	port := srv.URL[strings.LastIndex(srv.URL, ":")+1:]
	tests := []struct{ name, link string }{
		{"other server", other.URL + tally.DefaultPaths["usage"] + "?$skiptoken=2"},
		{"other scheme", "https://127.0.0.1:" + port + tally.DefaultPaths["usage"] + "?$skiptoken=2"},
		{"other host name, same port", "http://localhost:" + port + tally.DefaultPaths["usage"] + "?$skiptoken=2"},
		{"scheme-relative to the other server", "//" + strings.TrimPrefix(other.URL, "http://") + "/x"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hits.Store(0)
			link.Store(tt.link)
			c, _ := newTestClient(t, srv)
			rows, err := collect(c.Usage(context.Background(), tally.UsageQuery{Window: window(t, "2026-10-01", "2026-11-01", tally.Day)}))
			if err == nil || !strings.Contains(err.Error(), "not on the base url's origin") {
				t.Fatalf("err = %v, want a refused next link", err)
			}
			if strings.Contains(err.Error(), "skiptoken") {
				t.Errorf("error carries the link's query: %v", err)
			}
			checkRows(t, rows, 0, 3)
			if hits.Load() != 1 {
				t.Errorf("%d requests to the base server, want 1", hits.Load())
			}
		})
	}
	if n := otherHits.Load(); n != 0 {
		t.Errorf("%d requests reached the other origin", n)
	}
}

// dayServer answers a usage query with one row per day of its range, and
// refuses (400) a range longer than maxDays.
type dayServer struct {
	maxDays  int
	mu       sync.Mutex
	answered []string
	refused  []string
}

func (s *dayServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var q usageBody
	if err := json.NewDecoder(r.Body).Decode(&q); err != nil {
		writeAPIError(w, 400, "BadBody", err.Error(), "r")
		return
	}
	start, _ := tally.ParseDate(q.StartDate)
	end, _ := tally.ParseDate(q.EndDate)
	s.mu.Lock()
	defer s.mu.Unlock()
	if end.Sub(start) > time.Duration(s.maxDays)*24*time.Hour {
		s.refused = append(s.refused, q.StartDate+".."+q.EndDate)
		writeAPIError(w, 400, "InvalidRange", fmt.Sprintf("range longer than %d days", s.maxDays), "ref-range")
		return
	}
	s.answered = append(s.answered, q.StartDate+".."+q.EndDate)
	var rows []map[string]any
	for d := start; d.Before(end); d = d.AddDate(0, 0, 1) {
		rows = append(rows, map[string]any{"date": d.Format(time.RFC3339), "meterName": "m", "cost": "1.00", "currency": "USD", "quantity": 1})
	}
	writeJSON(w, 200, usageJSON(rows, ""))
}

func TestUsageSplitsRefusedRange(t *testing.T) {
	ds := &dayServer{maxDays: 10}
	srv := httptest.NewServer(ds)
	defer srv.Close()
	c, _ := newTestClient(t, srv)
	w := window(t, "2026-10-01", "2026-11-01", tally.Day)
	rows, err := collect(c.Usage(context.Background(), tally.UsageQuery{Window: w}))
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 31 {
		t.Fatalf("%d rows, want 31", len(rows))
	}
	for i, r := range rows {
		if want := w.Start.AddDate(0, 0, i); !r.Date.Equal(want) {
			t.Fatalf("row %d date %s, want %s (all days, in order, once)", i, r.Date, want)
		}
	}
	// The answered parts tile the window, in order.
	next := w.Start.Format(tally.DateLayout)
	for _, a := range ds.answered {
		s, e, _ := strings.Cut(a, "..")
		if s != next {
			t.Fatalf("answered parts %v do not tile the window", ds.answered)
		}
		next = e
	}
	if next != "2026-11-01" || len(ds.refused) == 0 {
		t.Errorf("answered %v, refused %v", ds.answered, ds.refused)
	}
}

// A server that refuses every range gets halves down to one day, then the
// 400 surfaces with the part that failed.
func TestUsageSplitStopsAtOneUnit(t *testing.T) {
	ds := &dayServer{maxDays: 0}
	srv := httptest.NewServer(ds)
	defer srv.Close()
	c, _ := newTestClient(t, srv)
	_, err := collect(c.Usage(context.Background(), tally.UsageQuery{Window: window(t, "2026-10-01", "2026-11-01", tally.Day)}))
	var ae *APIError
	if !errors.As(err, &ae) || ae.Status != 400 || ae.Code != "InvalidRange" || ae.Ref != "ref-range" {
		t.Fatalf("err = %v, want the 400 APIError", err)
	}
	if !strings.Contains(err.Error(), "(part 2026-10-01..2026-10-02)") {
		t.Errorf("error %q does not name the part", err)
	}
	want := []string{"2026-10-01..2026-11-01", "2026-10-01..2026-10-16", "2026-10-01..2026-10-08", "2026-10-01..2026-10-04", "2026-10-01..2026-10-02"}
	if fmt.Sprint(ds.refused) != fmt.Sprint(want) {
		t.Errorf("refused %v, want %v", ds.refused, want)
	}
}

// Cancelling the context while rows stream stops the iteration promptly
// with the context's error, whether the iterator is between rows or waiting
// on the body.
func TestUsageCancelMidStream(t *testing.T) {
	for _, tt := range []struct {
		name  string
		delay time.Duration // cancel this long after row 2 arrives
	}{{"between rows", 0}, {"while reading the body", 20 * time.Millisecond}} {
		t.Run(tt.name, func(t *testing.T) {
			handlerDone := make(chan struct{})
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				defer close(handlerDone)
				w.Header().Set("Content-Type", "application/json")
				rows, _ := json.Marshal(rowsFrom(0, 2))
				w.Write([]byte(`{"value":` + strings.TrimSuffix(string(rows), "]") + ","))
				w.(http.Flusher).Flush()
				<-r.Context().Done() // stall until the client goes away
			}))
			defer srv.Close()
			c, _ := newTestClient(t, srv)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var got []tally.MeterData
			var gotErr error
			for md, err := range c.Usage(ctx, tally.UsageQuery{Window: window(t, "2026-10-01", "2026-11-01", tally.Day)}) {
				if err != nil {
					gotErr = err
					continue // the iterator must end by itself after an error
				}
				got = append(got, md)
				if len(got) == 2 {
					if tt.delay == 0 {
						cancel()
					} else {
						time.AfterFunc(tt.delay, cancel)
					}
				}
			}
			if !errors.Is(gotErr, context.Canceled) {
				t.Fatalf("err = %v, want context.Canceled", gotErr)
			}
			if Retryable(gotErr) {
				t.Errorf("a cancel is not retryable")
			}
			checkRows(t, got, 0, 2)
			select {
			case <-handlerDone:
			case <-time.After(10 * time.Second):
				t.Fatal("the request was not cancelled: the server is still sending")
			}
		})
	}
}

// cutServer answers attempt n (from 1) with cuts[n-1] when there is one,
// otherwise in full. A cut sends the first bytes of the answer and breaks
// the connection.
type cutServer struct {
	body  []byte
	ctype string
	cuts  []func(w http.ResponseWriter, body []byte)
	hits  atomic.Int64
}

func (s *cutServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n := int(s.hits.Add(1))
	ct := s.ctype
	if ct == "" {
		ct = "application/json"
	}
	w.Header().Set("Content-Type", ct)
	if n <= len(s.cuts) && s.cuts[n-1] != nil {
		s.cuts[n-1](w, s.body)
		return
	}
	w.Write(s.body)
}

// abortAfter sends the first n bytes, chunked, then breaks the connection.
func abortAfter(n int) func(w http.ResponseWriter, body []byte) {
	return func(w http.ResponseWriter, body []byte) {
		w.Write(body[:n])
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler)
	}
}

// shortLength declares the full length but sends only n bytes.
func shortLength(n int) func(w http.ResponseWriter, body []byte) {
	return func(w http.ResponseWriter, body []byte) {
		w.Header().Set("Content-Length", fmt.Sprint(len(body)))
		w.Write(body[:n])
	}
}

func TestUsageCutBeforeAnyRowIsRetried(t *testing.T) {
	full := usageJSON(rowsFrom(0, 6), "")
	inFirstRow := strings.Index(string(full), `"meter-000"`)
	csvBody := []byte("date,meterName,cost,currency,quantity\n2026-10-01,meter-000,0.0000,USD,0\n2026-10-01,meter-001,1.0001,USD,1\n")
	tests := []struct {
		name  string
		body  []byte
		ctype string
		cuts  []func(http.ResponseWriter, []byte)
		rows  int
	}{
		{"cut in the envelope", full, "", []func(http.ResponseWriter, []byte){abortAfter(5)}, 6},
		{"cut inside the first row", full, "", []func(http.ResponseWriter, []byte){abortAfter(inFirstRow)}, 6},
		{"short content length, twice", full, "", []func(http.ResponseWriter, []byte){shortLength(12), shortLength(30)}, 6},
		{"empty body", full, "", []func(http.ResponseWriter, []byte){shortLength(0)}, 6},
		{"csv cut in the header", csvBody, "text/csv", []func(http.ResponseWriter, []byte){abortAfter(10)}, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cs := &cutServer{body: tt.body, ctype: tt.ctype, cuts: tt.cuts}
			srv := httptest.NewServer(cs)
			defer srv.Close()
			c, rec := newTestClient(t, srv)
			stats := &tally.Stats{}
			rows, err := collect(c.Usage(context.Background(), tally.UsageQuery{Window: window(t, "2026-10-01", "2026-11-01", tally.Day), Stats: stats}))
			if err != nil {
				t.Fatal(err)
			}
			checkRows(t, rows, 0, tt.rows)
			wantAttempts := int64(len(tt.cuts) + 1)
			if cs.hits.Load() != wantAttempts || stats.Requests.Load() != wantAttempts || stats.Retries.Load() != wantAttempts-1 || len(rec.get()) != int(wantAttempts-1) {
				t.Errorf("hits %d requests %d retries %d delays %v, want %d attempts", cs.hits.Load(), stats.Requests.Load(), stats.Retries.Load(), rec.get(), wantAttempts)
			}
		})
	}
}

// A cut before any row of page 2 is retried inside the iteration: the rows
// of page 1 are not yielded twice.
func TestUsageCutOnSecondPageBeforeItsRows(t *testing.T) {
	var p2 atomic.Int64
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("$skiptoken") == "" {
			writeJSON(w, 200, usageJSON(rowsFrom(0, 3), srv.URL+tally.DefaultPaths["usage"]+"?$skiptoken=2"))
			return
		}
		body := usageJSON(rowsFrom(3, 6), "")
		if p2.Add(1) == 1 {
			abortAfter(12)(w, body)
			return
		}
		writeJSON(w, 200, body)
	}))
	defer srv.Close()
	c, _ := newTestClient(t, srv)
	rows, err := collect(c.Usage(context.Background(), tally.UsageQuery{Window: window(t, "2026-10-01", "2026-11-01", tally.Day)}))
	if err != nil {
		t.Fatal(err)
	}
	checkRows(t, rows, 0, 6)
}

// A body cut after rows were handed on is resumed, not restarted: the same
// request is sent again, the rows already handed on are checked and
// skipped, and the consumer sees every row once, with no error.
func TestUsageCutAfterRowsResumesThePage(t *testing.T) {
	full := usageJSON(rowsFrom(0, 5), "")
	jsonCut := strings.Index(string(full), `"meter-003"`) // inside row 4
	csvFull := []byte("date,meterName,cost,currency,quantity\n")
	for i := 0; i < 5; i++ {
		csvFull = fmt.Appendf(csvFull, "2026-10-01,meter-%03d,%d.%04d,USD,%d\n", i, i, i, i)
	}
	csvCut := strings.Index(string(csvFull), "meter-003") + 3
	for _, tt := range []struct {
		name  string
		body  []byte
		ctype string
		cut   func(http.ResponseWriter, []byte)
	}{
		{"json, connection broken", full, "", abortAfter(jsonCut)},
		{"json, short content length", full, "", shortLength(jsonCut)},
		{"csv, cut mid-row", csvFull, "text/csv", abortAfter(csvCut)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cs := &cutServer{body: tt.body, ctype: tt.ctype, cuts: []func(http.ResponseWriter, []byte){tt.cut}}
			srv := httptest.NewServer(cs)
			defer srv.Close()
			c, rec := newTestClient(t, srv)
			stats := &tally.Stats{}
			q := tally.UsageQuery{Window: window(t, "2026-10-01", "2026-11-01", tally.Day), Stats: stats}
			var rows []tally.MeterData
			for md, err := range c.Usage(context.Background(), q) {
				if err != nil {
					t.Fatalf("after %d rows: %v", len(rows), err)
				}
				rows = append(rows, md)
			}
			checkRows(t, rows, 0, 5)
			if n := cs.hits.Load(); n != 2 || stats.Requests.Load() != 2 || stats.Retries.Load() != 1 {
				t.Errorf("%d requests (stats %d, retries %d), want the page asked for twice", n, stats.Requests.Load(), stats.Retries.Load())
			}
			if len(rec.get()) != 1 {
				t.Errorf("delays %v, want one backoff before the page is asked for again", rec.get())
			}
		})
	}
}

// A page cut on page k of many is resumed at that page: the pages before
// are not asked for again and every row is handed on once, in order.
func TestUsageCutOnALaterPageResumesThatPage(t *testing.T) {
	const pages, per = 6, 50
	var hits [pages + 1]atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := 1
		if v := r.URL.Query().Get("page"); v != "" {
			p, _ = strconv.Atoi(v)
		}
		next := ""
		if p < pages {
			next = fmt.Sprintf("/api/v1/organization/reports/usage?page=%d", p+1)
		}
		body := usageJSON(rowsFrom((p-1)*per, p*per), next)
		w.Header().Set("Content-Type", "application/json")
		if n := hits[p].Add(1); n <= 2 && p == 4 {
			// cut page 4 twice, at different rows
			abortAfter(strings.Index(string(body), fmt.Sprintf(`"meter-%03d"`, (p-1)*per+10*int(n))))(w, body)
			return
		}
		w.Write(body)
	}))
	defer srv.Close()
	c, _ := newTestClient(t, srv)
	var rows []tally.MeterData
	for md, err := range c.Usage(context.Background(), tally.UsageQuery{Window: window(t, "2026-10-01", "2026-11-01", tally.Day)}) {
		if err != nil {
			t.Fatalf("after %d rows: %v", len(rows), err)
		}
		rows = append(rows, md)
	}
	checkRows(t, rows, 0, pages*per)
	for p := 1; p <= pages; p++ {
		want := int64(1)
		if p == 4 {
			want = 3
		}
		if got := hits[p].Load(); got != want {
			t.Errorf("page %d asked for %d times, want %d", p, got, want)
		}
	}
}

// A page that comes back different after a cut (the answer changed between
// the requests) is not patched together: the fetch fails with a
// *StreamError, for the caller to restart the window.
func TestUsagePageChangedAfterACut(t *testing.T) {
	first := usageJSON(rowsFrom(0, 5), "")
	changed := rowsFrom(0, 5)
	changed[1]["cost"] = "9.9999"
	second := usageJSON(changed, "")
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if hits.Add(1) == 1 {
			abortAfter(strings.Index(string(first), `"meter-003"`))(w, first)
			return
		}
		w.Write(second)
	}))
	defer srv.Close()
	c, _ := newTestClient(t, srv)
	var n int
	var err error
	for _, e := range c.Usage(context.Background(), tally.UsageQuery{Window: window(t, "2026-10-01", "2026-11-01", tally.Day)}) {
		if e != nil {
			err = e
			break
		}
		n++
	}
	var se *StreamError
	if !errors.As(err, &se) || se.Rows != 3 || n != 3 || !strings.Contains(err.Error(), "different row 2") || !strings.Contains(err.Error(), "2026-10-01..2026-11-01") {
		t.Fatalf("after %d rows: %v (%T); want a *StreamError after 3 rows naming the window and the changed row", n, err, err)
	}
}

func TestUsageCSVAndJSONByContentType(t *testing.T) {
	csvBody := "meterName,date,quantity,currency,cost,project\nmeter-000,2026-10-01,0,USD,0.0000,alpha\nmeter-001,2026-10-01,1,USD,1.0001,\n"
	tests := []struct {
		name, ctype, body string
		format            tally.Format
	}{
		{"csv asked and sent", "text/csv; charset=utf-8", csvBody, tally.FormatCSV},
		{"csv asked, json sent", "application/json", string(usageJSON(rowsFrom(0, 2), "")), tally.FormatCSV},
		{"json asked, csv sent", "text/csv", csvBody, tally.FormatJSON},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", tt.ctype)
				w.Write([]byte(tt.body))
			}))
			defer srv.Close()
			c, _ := newTestClient(t, srv)
			rows, err := collect(c.Usage(context.Background(), tally.UsageQuery{Window: window(t, "2026-10-01", "2026-11-01", tally.Day), Format: tt.format}))
			if err != nil {
				t.Fatal(err)
			}
			checkRows(t, rows, 0, 2)
		})
	}
}

// Row errors name the window, the row number within it (across pages), the
// field and the value.
func TestUsageRowErrorsNameWindowAndRow(t *testing.T) {
	bad := rowsFrom(2, 4)
	bad[1]["cost"] = "twelve"
	missing := rowsFrom(2, 4)
	delete(missing[1], "quantity")
	tests := []struct {
		name    string
		page2   []byte
		ctype   string
		wantErr []string
	}{
		{"bad cost on page 2", usageJSON(bad, ""), "", []string{"fetch usage 2026-10-01..2026-11-01", "row 4", `"cost"`, `"twelve"`}},
		{"missing quantity on page 2", usageJSON(missing, ""), "", []string{"2026-10-01..2026-11-01", "row 4", `"quantity"`, "missing"}},
		{"csv unknown column", []byte("date,meterName,cost,currency,quantity,colour\n"), "text/csv", []string{"2026-10-01..2026-11-01", `"colour"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var srv *httptest.Server
			srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.RawQuery == "" {
					writeJSON(w, 200, usageJSON(rowsFrom(0, 2), srv.URL+tally.DefaultPaths["usage"]+"?p=2"))
					return
				}
				ct := tt.ctype
				if ct == "" {
					ct = "application/json"
				}
				w.Header().Set("Content-Type", ct)
				w.Write(tt.page2)
			}))
			defer srv.Close()
			c, rec := newTestClient(t, srv)
			rows, err := collect(c.Usage(context.Background(), tally.UsageQuery{Window: window(t, "2026-10-01", "2026-11-01", tally.Day)}))
			if err == nil {
				t.Fatal("no error")
			}
			for _, s := range tt.wantErr {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not contain %q", err, s)
				}
			}
			if Retryable(err) || len(rec.get()) != 0 {
				t.Errorf("a bad row must not be retried: %v, delays %v", err, rec.get())
			}
			if len(rows) < 2 {
				t.Errorf("rows before the bad one: %d", len(rows))
			}
		})
	}
}

// supplemental.records, where the interface sends it, must match the rows
// of the answer: either way round, before or after value, a mismatch fails
// the window naming it; an answer without records is not checked.
func TestUsageSupplementalRecords(t *testing.T) {
	rows, _ := json.Marshal(rowsFrom(0, 3))
	for _, c := range []struct {
		name, body, want string
	}{
		{"fewer rows than records, after value", `{"value":` + string(rows) + `,"supplemental":{"records":4}}`, "supplemental.records says 4 rows, the answer held 3"},
		{"more rows than records, before value", `{"supplemental":{"records":2},"value":` + string(rows) + `}`, "supplemental.records says 2 rows, the answer held 3"},
		{"records absent", `{"value":` + string(rows) + `,"supplemental":{"start":"2026-10-01"}}`, ""},
		{"records agree", `{"supplemental":{"records":3},"value":` + string(rows) + `}`, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				writeJSON(w, http.StatusOK, []byte(c.body))
			}))
			defer srv.Close()
			cl, _ := newTestClient(t, srv)
			var got []tally.MeterData
			var err error
			for md, e := range cl.Usage(context.Background(), tally.UsageQuery{Window: window(t, "2026-10-01", "2026-11-01", tally.Day)}) {
				if e != nil {
					err = e
					break
				}
				got = append(got, md)
			}
			if c.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				checkRows(t, got, 0, 3)
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "2026-10-01..2026-11-01") || Retryable(err) {
				t.Fatalf("error %v; want a window failure saying %q", err, c.want)
			}
		})
	}
}

// An answer that never pauses longer than api.timeout but never ends (a
// row every few milliseconds, for ever) is stopped at api.answer_timeout,
// with an error naming it, and not retried: the same answer would take as
// long again.
func TestUsageAnswerTimeout(t *testing.T) {
	var requests atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"value":[`))
		for i := 0; ; i++ {
			row, _ := json.Marshal(usageRow(i % 1000))
			if i > 0 {
				w.Write([]byte(","))
			}
			if _, err := w.Write(row); err != nil {
				return
			}
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}))
	defer srv.Close()
	c, _ := newTestClient(t, srv, WithHTTPClient(NewHTTPClient(200*time.Millisecond, 400*time.Millisecond, 2)))
	rows, err := collect(c.Usage(context.Background(), tally.UsageQuery{Window: window(t, "2026-10-01", "2026-11-01", tally.Day)}))
	var ae *AnswerTimeoutError
	if !errors.As(err, &ae) || ae.Limit != 400*time.Millisecond || !strings.Contains(err.Error(), "api.answer_timeout") || !strings.Contains(err.Error(), "2026-10-01..2026-11-01") {
		t.Fatalf("err = %v, want an AnswerTimeoutError naming api.answer_timeout and the window", err)
	}
	if Retryable(err) || requests.Load() != 1 {
		t.Errorf("the answer was asked for %d times (retryable %v), want once", requests.Load(), Retryable(err))
	}
	if len(rows) == 0 {
		t.Errorf("no row arrived before the bound: the test proves nothing")
	}
}
