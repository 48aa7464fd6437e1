package sim_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tally-dev/tally"
	"github.com/tally-dev/tally/fetch/sim"
)

func TestParseFaults(t *testing.T) {
	ok := []struct {
		spec string
		want sim.Faults
	}{
		{"", sim.Faults{}},
		{"429=0.1,429bare=0.05,5xx=0.05,cut=0.02,slow=0.01:2s,refuse=10,seed=7",
			sim.Faults{Seed: 7, RateLimit: 0.1, RateLimitBare: 0.05, ServerError: 0.05, Cut: 0.02, Slow: 0.01, SlowDelay: 2 * time.Second, RefuseRangeDays: 10}},
		{" slow = 0.5 , 5xx=1 ", sim.Faults{Slow: 0.5, SlowDelay: time.Second, ServerError: 1}},
		{"cut=1,seed=-3", sim.Faults{Cut: 1, Seed: -3}},
	}
	for _, c := range ok {
		got, err := sim.ParseFaults(c.spec)
		if err != nil || got != c.want {
			t.Errorf("ParseFaults(%q) = %+v, %v; want %+v", c.spec, got, err, c.want)
		}
		if again, err := sim.ParseFaults(got.String()); err != nil || again != got {
			t.Errorf("ParseFaults(%q.String() = %q) = %+v, %v", c.spec, got.String(), again, err)
		}
	}
	bad := []struct{ spec, mention string }{
		{"429=2", "from 0 to 1"},
		{"429=-0.1", `"429=-0.1"`},
		{"5xx=lots", "5xx=lots"},
		{"teapot=0.1", "allowed: 429, 429bare, 5xx, cut, slow, refuse, seed"},
		{"429", "KEY=VALUE"},
		{"slow=0.1:soon", "positive duration"},
		{"slow=0.1:-2s", "positive duration"},
		{"refuse=0", "1 or more"},
		{"refuse=1.5", "whole number of days"},
		{"seed=x", "whole number"},
		{"429=0.1,429=0.2", "given twice"},
		{"429=0.6,5xx=0.6", "add up to 1.2"},
	}
	for _, c := range bad {
		_, err := sim.ParseFaults(c.spec)
		if err == nil || !strings.Contains(err.Error(), c.mention) {
			t.Errorf("ParseFaults(%q) error %v, want one mentioning %q", c.spec, err, c.mention)
		}
	}
}

const oneDay = `{"startDate":"2025-03-01","endDate":"2025-03-02"}`

func TestRateLimitFaults(t *testing.T) {
	_, ts := setup(t, sim.Options{Faults: sim.Faults{RateLimit: 1}})
	for i := 0; i < 4; i++ {
		resp := do(t, http.MethodPost, ts.URL+usagePath, oneDay, "")
		ra := resp.Header.Get("Retry-After")
		wantError(t, resp, http.StatusTooManyRequests, "TooManyRequests")
		if i%2 == 0 {
			if n, err := strconv.Atoi(ra); err != nil || n < 1 {
				t.Errorf("request %d: Retry-After %q, want whole seconds", i, ra)
			}
		} else {
			when, err := http.ParseTime(ra)
			if err != nil || when.Before(time.Now().Add(-time.Minute)) || when.After(time.Now().Add(time.Minute)) {
				t.Errorf("request %d: Retry-After %q, want an HTTP date about now: %v", i, ra, err)
			}
		}
	}
	// Authentication and routing come first: no fault replaces a 401 or 404.
	wantError(t, do(t, http.MethodGet, ts.URL+"/api/v1/projects", "", "-"), http.StatusUnauthorized, "Unauthorized")
	wantError(t, do(t, http.MethodGet, ts.URL+"/api/v1/nothing", "", ""), http.StatusNotFound, "NotFound")
}

func TestBareRateLimitFaults(t *testing.T) {
	_, ts := setup(t, sim.Options{Faults: sim.Faults{RateLimitBare: 1}})
	var seen []string
	for i := 0; i < 4; i++ {
		resp := do(t, http.MethodGet, ts.URL+"/api/v1/projects", "", "")
		_, has := resp.Header["Retry-After"]
		seen = append(seen, strconv.FormatBool(has)+":"+resp.Header.Get("Retry-After"))
		wantError(t, resp, http.StatusTooManyRequests, "TooManyRequests")
	}
	if got := strings.Join(seen, " "); got != "false: true:0 false: true:0" {
		t.Errorf("Retry-After headers %s, want none and 0 alternating", got)
	}
}

func TestServerErrorFaults(t *testing.T) {
	_, ts := setup(t, sim.Options{Faults: sim.Faults{ServerError: 1, Seed: 2}})
	codes := map[int]string{500: "InternalServerError", 502: "BadGateway", 503: "ServiceUnavailable", 504: "GatewayTimeout"}
	seen := map[int]bool{}
	for i := 0; i < 24; i++ {
		resp := do(t, http.MethodPost, ts.URL+usagePath, oneDay, "")
		code, ok := codes[resp.StatusCode]
		if !ok {
			t.Fatalf("status %d, want one of 500, 502, 503, 504", resp.StatusCode)
		}
		wantError(t, resp, resp.StatusCode, code)
		seen[resp.StatusCode] = true
	}
	if len(seen) < 3 {
		t.Errorf("24 server errors used only %v", seen)
	}
}

// readCut reads an answer that must stop early: the body ends with an
// error, not a clean EOF.
func readCut(t *testing.T, method, url, body string) []byte {
	t.Helper()
	resp := do(t, method, url, body, "")
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("status %d, want 200 with a cut body", resp.StatusCode)
	}
	got, err := io.ReadAll(resp.Body)
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("reading a cut body: err %v, want unexpected EOF (got %d bytes)", err, len(got))
	}
	return got
}

func TestCutFaults(t *testing.T) {
	_, ts := setup(t, sim.Options{Faults: sim.Faults{Cut: 1, Seed: 9}})
	for i := 0; i < 6; i++ {
		got := readCut(t, http.MethodPost, ts.URL+usagePath, oneDay)
		if !bytes.HasPrefix(got, []byte(`{"value":[`)) || json.Valid(got) {
			t.Fatalf("cut JSON answer %q", got)
		}
		lines := bytes.Split(got, []byte("\n"))
		last := lines[len(lines)-1]
		if !bytes.HasPrefix(last, []byte(`{"date":`)) || bytes.HasSuffix(last, []byte("}")) {
			t.Fatalf("the cut falls outside a row: last line %q", last)
		}
		csvAnswer := readCut(t, http.MethodPost, ts.URL+usagePath, `{"startDate":"2025-03-01","endDate":"2025-03-02","format":"csv"}`)
		if bytes.HasSuffix(csvAnswer, []byte("\n")) || !bytes.HasPrefix(csvAnswer, []byte("date,dateProcessed,")) {
			t.Fatalf("cut CSV answer ends %q", csvAnswer[max(0, len(csvAnswer)-80):])
		}
	}
	// An answer with no rows is cut too, and so is a list.
	readCut(t, http.MethodPost, ts.URL+usagePath, `{"startDate":"2020-03-01","endDate":"2020-03-02"}`)
	if got := readCut(t, http.MethodGet, ts.URL+"/api/v1/organization/paymentMethods", ""); json.Valid(got) {
		t.Errorf("cut list %q is whole", got)
	}
	// Errors are never cut.
	wantError(t, do(t, http.MethodPost, ts.URL+usagePath, `{"startDate":"2025-03-01"}`, ""), 400, "InvalidRequest")
}

func TestSlowFaults(t *testing.T) {
	delay := 40 * time.Millisecond
	s, ts := setup(t, sim.Options{Faults: sim.Faults{Slow: 1, SlowDelay: delay}})
	began := time.Now()
	got := decodePage(t, post(t, ts.URL+usagePath, oneDay)).Value
	if took := time.Since(began); took < delay {
		t.Errorf("slow answer came after %s, want at least %s", took, delay)
	}
	sameRows(t, "slow answer", got, s.Rows(usageQuery("2025-03-01", "2025-03-02", tally.Day)))
}

func TestRefuseRange(t *testing.T) {
	s, ts := setup(t, sim.Options{Faults: sim.Faults{RefuseRangeDays: 10}})
	e := wantError(t, do(t, http.MethodPost, ts.URL+usagePath, `{"startDate":"2025-03-01","endDate":"2025-03-12"}`, ""), 400, "InvalidRange")
	if !strings.Contains(e.Error.Detail, "11 days") || !strings.Contains(e.Error.Detail, "10 days") {
		t.Errorf("detail %q does not say the span and the limit", e.Error.Detail)
	}
	post(t, ts.URL+usagePath, `{"startDate":"2025-03-01","endDate":"2025-03-11"}`)
	s.SetFaults(sim.Faults{})
	post(t, ts.URL+usagePath, `{"startDate":"2025-03-01","endDate":"2025-03-12"}`)
}

// statuses sends n requests in order and lists the answers' statuses,
// reading every body to the end.
func statuses(t *testing.T, url string, n int) string {
	var out []string
	for i := 0; i < n; i++ {
		resp := do(t, http.MethodPost, url+usagePath, oneDay, "")
		_, err := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		st := strconv.Itoa(resp.StatusCode)
		if err != nil {
			st += "cut"
		}
		out = append(out, st)
	}
	return strings.Join(out, " ")
}

func TestFaultsAreDeterministic(t *testing.T) {
	f := sim.Faults{Seed: 7, RateLimit: 0.2, RateLimitBare: 0.1, ServerError: 0.2, Cut: 0.2}
	_, a := setup(t, sim.Options{Faults: f})
	_, b := setup(t, sim.Options{Faults: f})
	f.Seed = 8
	_, c := setup(t, sim.Options{Faults: f})
	x, y, z := statuses(t, a.URL, 30), statuses(t, b.URL, 30), statuses(t, c.URL, 30)
	if x != y {
		t.Errorf("same fault seed, different faults:\n%s\n%s", x, y)
	}
	if x == z {
		t.Errorf("another fault seed, same faults: %s", x)
	}
	for _, want := range []string{"200 ", "429", "200cut"} {
		if !strings.Contains(x+" ", want) {
			t.Errorf("30 requests at these rates never answered %q: %s", want, x)
		}
	}
}

// TestFaultsNeverChangeData retries through faults, as a client would, and
// gets exactly the fault-free rows.
func TestFaultsNeverChangeData(t *testing.T) {
	s, ts := setup(t, sim.Options{UsagePaging: true, PageSize: 9, Faults: sim.Faults{Seed: 1, RateLimitBare: 0.2, ServerError: 0.2, Cut: 0.3}})
	q := usageQuery("2025-04-01", "2025-04-04", tally.Day)
	body := requestBody(q)
	var rows []tally.MeterData
	url := ts.URL + usagePath
	for attempts := 0; url != ""; attempts++ {
		if attempts > 500 {
			t.Fatal("no progress through the faults")
		}
		resp := do(t, http.MethodPost, url, body, "")
		raw, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != 200 {
			continue
		}
		p := decodePage(t, raw)
		rows = append(rows, p.Value...)
		url = p.NextLink
	}
	sameRows(t, "rows through faults", rows, s.Rows(q))
}

func TestSetFaultsConcurrently(t *testing.T) {
	s, ts := setup(t, sim.Options{})
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 10; i++ {
				req, _ := http.NewRequest(http.MethodGet, ts.URL+"/api/v1/locations", nil)
				req.Header.Set("Authorization", "Bearer "+testToken)
				resp, err := client.Do(req)
				if err != nil {
					t.Error(err)
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		}()
	}
	for i := 0; i < 10; i++ {
		s.SetFaults(sim.Faults{Seed: int64(i), RateLimitBare: 0.5})
	}
	wg.Wait()
	s.SetFaults(sim.Faults{})
	resp := do(t, http.MethodGet, ts.URL+"/api/v1/locations", "", "")
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("after clearing faults: status %d", resp.StatusCode)
	}
	if got := s.Requests(); got != 41 {
		t.Errorf("Requests() = %d, want 41", got)
	}
}
