package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tally-dev/tally"
	"github.com/tally-dev/tally/fetch/sim"
	"github.com/tally-dev/tally/job"
	"github.com/tally-dev/tally/store"
)

// TestHostileBodiesExitAsREADMESays: one window's usage answer is hostile
// in each way an adversarial run found; tally fetch exits 3 (partial)
// naming the window and what was wrong (README, Guarantees: Bad answers,
// Bounded answers), the window's rows stay as the previous run stored
// them, and the other windows load.
func TestHostileBodiesExitAsREADMESays(t *testing.T) {
	now := time.Now().UTC()
	start := tally.Day.Truncate(now).AddDate(0, 0, -21)
	// The window the lookback (7 days) fetches again on every run.
	bad := tally.Window{Start: start.AddDate(0, 0, 14), End: start.AddDate(0, 0, 21), Granularity: tally.Day}
	s := sim.New(sim.Options{Token: badToken, Seed: 3, Start: start, Now: func() time.Time { return now }})
	var hostile atomic.Pointer[func(w http.ResponseWriter, body []byte)]
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		if h := hostile.Load(); h != nil && strings.Contains(string(body), `"startDate":"`+bad.Start.Format(tally.DateLayout)+`"`) {
			rec := httptest.NewRecorder()
			s.ServeHTTP(rec, r)
			w.Header().Set("Content-Type", "application/json")
			(*h)(w, rec.Body.Bytes())
			return
		}
		s.ServeHTTP(w, r)
	}))
	defer srv.Close()
	dir := t.TempDir()
	db := filepath.Join(dir, "tally.duckdb")
	cfg := writeBadConfig(t, dir, "tally.yaml", fmt.Sprintf(
		"api:\n  base_url: %s\n  max_retries: 1\n  timeout: 1s\n  answer_timeout: 2s\nusage:\n  granularity: day\n  start: %s\n  window: 7d\nstore:\n  path: tally.duckdb\n",
		srv.URL, start.Format(tally.DateLayout)))
	t.Setenv("TALLY_API_TOKEN", badToken)
	t.Setenv("TALLY_DB", "")
	t.Setenv("TALLY_BASE_URL", "")
	if code, msg := badCLI(t, "fetch", "--config", cfg); code != job.ExitOK {
		t.Fatalf("the first fetch: exit %d\n%s", code, msg)
	}
	windowRows := func() string {
		st, err := store.Open(context.Background(), db, store.ReadOnly())
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		// Every column of every row, the run that wrote it included.
		var n int
		var sum string
		if err := st.DB().QueryRow(`SELECT count(*), coalesce(md5(string_agg(CAST(u AS VARCHAR), ',' ORDER BY CAST(u AS VARCHAR))), '')
FROM usage u WHERE date >= ? AND date < ?`, bad.Start, bad.End).Scan(&n, &sum); err != nil {
			t.Fatal(err)
		}
		return fmt.Sprintf("%d %s", n, sum)
	}
	before := windowRows()
	if strings.HasPrefix(before, "0 ") {
		t.Fatalf("the bad window holds no rows to keep: %s", before)
	}
	editRow := func(body []byte, edit func(string) string) []byte {
		i := bytes.Index(body, []byte(`{"date"`))
		j := bytes.IndexByte(body[i:], '}')
		return append(append(append([]byte(nil), body[:i]...), edit(string(body[i:i+j+1]))...), body[i+j+1:]...)
	}
	for _, c := range []struct {
		name   string
		answer func(w http.ResponseWriter, body []byte)
		says   []string
	}{
		{"a field of 8 MiB", func(w http.ResponseWriter, body []byte) {
			streamInto(w, body, `"meterName":"`, 'x', 8<<20)
		}, []string{"row 1", "1 MiB, fetch.MaxRowBytes"}},
		{"64 MiB of spaces inside value", func(w http.ResponseWriter, body []byte) {
			streamInto(w, body, `"value":[`, ' ', 64<<20)
		}, []string{"row 1", "1 MiB, fetch.MaxRowBytes"}},
		{"a project that is not UTF-8", func(w http.ResponseWriter, body []byte) {
			w.Write(editRow(body, func(row string) string {
				return strings.Replace(row, `"project":"`, "\"project\":\"alpha\xff\xfe-", 1)
			}))
		}, []string{"row 1", `field "project"`, "is not valid UTF-8"}},
		{"an answer that never ends", func(w http.ResponseWriter, body []byte) {
			w.Write([]byte(`{"value":[`))
			for i := 0; ; i++ {
				if _, err := w.Write([]byte(" ")); err != nil {
					return
				}
				w.(http.Flusher).Flush()
				time.Sleep(50 * time.Millisecond)
				if i > 400 {
					return // the test failed: 20s
				}
			}
		}, []string{"api.answer_timeout"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := c.answer
			hostile.Store(&h)
			defer hostile.Store(nil)
			code, msg := badCLI(t, "fetch", "--config", cfg)
			if code != job.ExitPartial {
				t.Fatalf("exit %d, want %d (partial):\n%s", code, job.ExitPartial, msg)
			}
			for _, want := range append([]string{"1 window(s) failed", bad.String()}, c.says...) {
				if !strings.Contains(msg, want) {
					t.Errorf("the message does not say %q:\n%.2000s", want, msg)
				}
			}
			if after := windowRows(); after != before {
				t.Errorf("the failed window changed:\nbefore %.300s\nafter  %.300s", before, after)
			}
		})
	}
}

// streamInto sends body with n bytes c inserted after the first at,
// streamed as they go so that the answer starts at once (a machine busy
// building 64 MiB would otherwise trip api.timeout first), and stops when
// the client goes away.
func streamInto(w http.ResponseWriter, body []byte, at string, c byte, n int) {
	i := bytes.Index(body, []byte(at)) + len(at)
	if _, err := w.Write(body[:i]); err != nil {
		return
	}
	chunk := bytes.Repeat([]byte{c}, 64<<10)
	for sent := 0; sent < n; sent += len(chunk) {
		if _, err := w.Write(chunk); err != nil {
			return
		}
	}
	w.Write(body[i:])
}
