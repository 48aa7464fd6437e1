package sim_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/tally-dev/tally"
	"github.com/tally-dev/tally/fetch/sim"
)

const testToken = "test-token"

var (
	start = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	// clock is late enough that every hour of 2025 is charged.
	clock = time.Date(2026, 1, 10, 12, 30, 0, 0, time.UTC)
)

// client is the tests' own: never http.DefaultClient.
var client = &http.Client{Timeout: time.Minute}

func fixedClock(t time.Time) func() time.Time { return func() time.Time { return t } }

// setup starts a sim behind a real HTTP server.
func setup(t *testing.T, opts sim.Options) (*sim.Server, *httptest.Server) {
	t.Helper()
	if opts.Token == "" {
		opts.Token = testToken
	}
	if opts.Start.IsZero() {
		opts.Start = start
	}
	if opts.Now == nil {
		opts.Now = fixedClock(clock)
	}
	s := sim.New(opts)
	ts := httptest.NewServer(s)
	t.Cleanup(ts.Close)
	return s, ts
}

// do sends one request with the test token (unless auth overrides the
// Authorization header; "-" sends none).
func do(t *testing.T, method, url, body, auth string) *http.Response {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	switch auth {
	case "":
		req.Header.Set("Authorization", "Bearer "+testToken)
	case "-":
	default:
		req.Header.Set("Authorization", auth)
	}
	req.Header.Set("Accept", "application/json")
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

type errorBody struct {
	Error struct {
		Code        string         `json:"code"`
		Detail      string         `json:"detail"`
		ExtraDetail map[string]any `json:"extraDetail"`
	} `json:"error"`
	Ref    string `json:"ref"`
	Status *int   `json:"status"`
}

// wantError checks resp is the interface's Error body with status and code.
func wantError(t *testing.T, resp *http.Response, status int, code string) errorBody {
	t.Helper()
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != status {
		t.Fatalf("status %d, want %d; body %s", resp.StatusCode, status, raw)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q, want application/json", ct)
	}
	var e errorBody
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&e); err != nil {
		t.Fatalf("error body %s: %v", raw, err)
	}
	if e.Status == nil || *e.Status != status || e.Error.Code != code || e.Error.Detail == "" || e.Ref == "" {
		t.Errorf("error body %s: want status %d, code %q, a detail and a ref", raw, status, code)
	}
	return e
}

func TestUnauthorized(t *testing.T) {
	s, ts := setup(t, sim.Options{})
	url := ts.URL + "/api/v1/organization/paymentMethods"
	cases := map[string]string{
		"no header":     "-",
		"wrong token":   "Bearer nope",
		"basic scheme":  "Basic " + testToken,
		"token no type": testToken,
	}
	refs := map[string]bool{}
	for name, auth := range cases {
		t.Run(name, func(t *testing.T) {
			resp := do(t, http.MethodGet, url, "", auth)
			if resp.Header.Get("WWW-Authenticate") != "Bearer" {
				t.Errorf("WWW-Authenticate %q, want Bearer", resp.Header.Get("WWW-Authenticate"))
			}
			e := wantError(t, resp, http.StatusUnauthorized, "Unauthorized")
			if strings.Contains(e.Error.Detail, testToken) {
				t.Errorf("detail %q repeats the token", e.Error.Detail)
			}
			if refs[e.Ref] {
				t.Errorf("ref %q used twice", e.Ref)
			}
			refs[e.Ref] = true
		})
	}
	// Usage is guarded too, before its body is looked at.
	wantError(t, do(t, http.MethodPost, ts.URL+"/api/v1/organization/reports/usage", `{}`, "-"), http.StatusUnauthorized, "Unauthorized")
	resp := do(t, http.MethodGet, url, "", "")
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("with the token: status %d", resp.StatusCode)
	}
	if got := s.Requests(); got != int64(len(cases))+2 {
		t.Errorf("Requests() = %d, want %d", got, len(cases)+2)
	}
	if s.Token() != testToken {
		t.Errorf("Token() = %q", s.Token())
	}
	if got := sim.New(sim.Options{}).Token(); got != sim.DefaultToken {
		t.Errorf("default token %q, want %q", got, sim.DefaultToken)
	}
}

func TestNotFoundAndMethodNotAllowed(t *testing.T) {
	_, ts := setup(t, sim.Options{})
	wantError(t, do(t, http.MethodGet, ts.URL+"/api/v1/nothing", "", ""), http.StatusNotFound, "NotFound")
	wantError(t, do(t, http.MethodGet, ts.URL+"/api/v2/projects", "", ""), http.StatusNotFound, "NotFound")
	wantError(t, do(t, http.MethodGet, ts.URL+"/api/v1/organization/paymentMethods/00000000-0000-4000-8000-000000000000", "", ""), http.StatusNotFound, "NotFound")
	wantError(t, do(t, http.MethodGet, ts.URL+"/api/v1/organization/paymentMethods/nope/rateCard", "", ""), http.StatusNotFound, "NotFound")
	wantError(t, do(t, http.MethodGet, ts.URL+"/api/v1/projects/nope/usage", "", ""), http.StatusNotFound, "NotFound")
	resp := do(t, http.MethodDelete, ts.URL+"/api/v1/projects", "", "")
	if resp.Header.Get("Allow") != "GET" {
		t.Errorf("Allow %q, want GET", resp.Header.Get("Allow"))
	}
	wantError(t, resp, http.StatusMethodNotAllowed, "MethodNotAllowed")
	// A usage GET is only the continuation of a paged answer.
	wantError(t, do(t, http.MethodGet, ts.URL+"/api/v1/organization/reports/usage", "", ""), http.StatusMethodNotAllowed, "MethodNotAllowed")
	wantError(t, do(t, http.MethodPut, ts.URL+"/api/v1/organization/reports/usage", `{}`, ""), http.StatusMethodNotAllowed, "MethodNotAllowed")
}

func TestUsageValidation(t *testing.T) {
	_, ts := setup(t, sim.Options{})
	pmID := "8c4b0e5e-2f57-4a51-9d3c-1d6f0b7a9e21"
	cases := []struct {
		name, body string
		status     int
		code       string
	}{
		{"hour 31 days", `{"startDate":"2025-01-01","endDate":"2025-02-01","granularity":"hour"}`, 200, ""},
		{"hour 32 days", `{"startDate":"2025-01-01","endDate":"2025-02-02","granularity":"hour"}`, 400, "InvalidRange"},
		{"day one year", `{"startDate":"2025-01-01","endDate":"2026-01-01"}`, 200, ""},
		{"day one year and a day", `{"startDate":"2025-01-01","endDate":"2026-01-02","granularity":"day"}`, 400, "InvalidRange"},
		{"day from a leap day", `{"startDate":"2024-02-29","endDate":"2025-02-28","granularity":"day"}`, 200, ""},
		{"day from a leap day past 28 February", `{"startDate":"2024-02-29","endDate":"2025-03-01","granularity":"day"}`, 400, "InvalidRange"},
		{"month two years", `{"startDate":"2024-01-01","endDate":"2026-01-01","granularity":"month"}`, 200, ""},
		{"week unlimited", `{"startDate":"2023-01-02","endDate":"2026-01-05","granularity":"week"}`, 200, ""},
		{"both filters", `{"startDate":"2025-01-01","endDate":"2025-01-02","projectNames":["newsroom"],"paymentMethodIds":["` + pmID + `"]}`, 400, "InvalidRequest"},
		{"end before start", `{"startDate":"2025-01-02","endDate":"2025-01-01"}`, 400, "InvalidRange"},
		{"end equals start", `{"startDate":"2025-01-02","endDate":"2025-01-02"}`, 400, "InvalidRange"},
		{"bad start date", `{"startDate":"2025-1-2","endDate":"2025-01-03"}`, 400, "InvalidRequest"},
		{"date-time", `{"startDate":"2025-01-01T00:00:00Z","endDate":"2025-01-03"}`, 400, "InvalidRequest"},
		{"no end date", `{"startDate":"2025-01-01"}`, 400, "InvalidRequest"},
		{"bad granularity", `{"startDate":"2025-01-01","endDate":"2025-01-02","granularity":"minute"}`, 400, "InvalidRequest"},
		{"bad format", `{"startDate":"2025-01-01","endDate":"2025-01-02","format":"xml"}`, 400, "InvalidRequest"},
		{"group by meter", `{"startDate":"2025-01-01","endDate":"2025-01-02","groupBy":["meter"]}`, 200, ""},
		{"group by project", `{"startDate":"2025-01-01","endDate":"2025-01-02","groupBy":["project"]}`, 400, "InvalidRequest"},
		{"payment method not a uuid", `{"startDate":"2025-01-01","endDate":"2025-01-02","paymentMethodIds":["abc"]}`, 400, "InvalidRequest"},
		{"not json", `startDate=2025-01-01`, 400, "InvalidRequest"},
		{"empty body", ``, 400, "InvalidRequest"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			resp := do(t, http.MethodPost, ts.URL+"/api/v1/organization/reports/usage", c.body, "")
			if c.status == 200 {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 {
					t.Fatalf("status %d, want 200", resp.StatusCode)
				}
				return
			}
			e := wantError(t, resp, c.status, c.code)
			if c.code == "InvalidRange" && !strings.Contains(e.Error.Detail, "2025") && !strings.Contains(e.Error.Detail, "202") {
				t.Errorf("detail %q does not name the dates", e.Error.Detail)
			}
		})
	}
}

// page is a list envelope as the tests read it.
type page struct {
	Value        []json.RawMessage `json:"value"`
	Supplemental struct {
		Kind       string `json:"kind"`
		Count      int    `json:"count"`
		Operation  string `json:"operation"`
		Pagination struct {
			Start, End, Records, Total int
		} `json:"pagination"`
	} `json:"supplemental"`
	NextLink string `json:"@odata.nextLink"`
}

func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	resp := do(t, http.MethodGet, url, "", "")
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: status %d: %s", url, resp.StatusCode, raw)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("GET %s: Content-Type %q", url, ct)
	}
	if err := json.Unmarshal(raw, v); err != nil {
		t.Fatalf("GET %s: %v: %s", url, err, raw)
	}
}

func TestListPaging(t *testing.T) {
	_, ts := setup(t, sim.Options{PageSize: 2})
	cases := []struct {
		name, path string
		kind       string
		pages      []int
	}{
		{"payment methods, default size", "/api/v1/organization/paymentMethods", "PaymentMethod", []int{2, 2}},
		{"payment methods, $top=3", "/api/v1/organization/paymentMethods?$top=3", "PaymentMethod", []int{3, 1}},
		{"projects, default size", "/api/v1/projects", "Project", []int{2, 2, 1}},
		{"projects, $top=10", "/api/v1/projects?$top=10", "Project", []int{5}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			url := ts.URL + c.path
			var got []int
			ids := map[string]bool{}
			total, seen := 0, 0
			for url != "" {
				var p page
				getJSON(t, url, &p)
				s := p.Supplemental
				pg := s.Pagination
				if s.Kind != c.kind || s.Operation != "list" || s.Count != len(p.Value) || pg.Records != len(p.Value) {
					t.Errorf("page %d supplemental %+v for %d items", len(got), s, len(p.Value))
				}
				if pg.Start != seen+1 || pg.End != seen+len(p.Value) {
					t.Errorf("page %d pagination start %d end %d, want %d and %d", len(got), pg.Start, pg.End, seen+1, seen+len(p.Value))
				}
				for _, v := range p.Value {
					var item struct {
						Metadata struct{ ID string } `json:"metadata"`
					}
					json.Unmarshal(v, &item)
					if item.Metadata.ID == "" || ids[item.Metadata.ID] {
						t.Errorf("item id %q empty or repeated", item.Metadata.ID)
					}
					ids[item.Metadata.ID] = true
				}
				seen += len(p.Value)
				total = pg.Total
				got = append(got, len(p.Value))
				if p.NextLink != "" && !strings.HasPrefix(p.NextLink, ts.URL+"/api/v1/") {
					t.Fatalf("nextLink %q leaves the server", p.NextLink)
				}
				url = p.NextLink
			}
			if !equalInts(got, c.pages) || total != seen {
				t.Errorf("pages %v (total %d, seen %d), want %v", got, total, seen, c.pages)
			}
		})
	}
	wantError(t, do(t, http.MethodGet, ts.URL+"/api/v1/projects?$top=0", "", ""), 400, "InvalidRequest")
	wantError(t, do(t, http.MethodGet, ts.URL+"/api/v1/projects?$top=x", "", ""), 400, "InvalidRequest")
	wantError(t, do(t, http.MethodGet, ts.URL+"/api/v1/projects?$skiptoken=2", "", ""), 400, "InvalidRequest")
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// usageQuery builds a tally.UsageQuery for the tests.
func usageQuery(from, to string, g tally.Granularity) tally.UsageQuery {
	return tally.UsageQuery{Window: tally.Window{Start: mustDate(from), End: mustDate(to), Granularity: g}}
}

func mustDate(s string) time.Time {
	t, err := tally.ParseDate(s)
	if err != nil {
		panic(err)
	}
	return t
}
