package schedules

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/tally-dev/tally"
	"github.com/tally-dev/tally/internal/prooftest"
	"github.com/tally-dev/tally/job"
)

// In-process security proofs: the token is never sent to another origin,
// and TLS is verified. The process-level ones (a full run of the tally
// binary) are in cmd/tally.

// TestSecurityNextLinkToAnotherOriginRefused: a usage answer whose next
// link points at another origin, and one that redirects there. The token
// is not sent there: each window fails naming the refusal, the others load
// exactly, and the other origin sees no request at all.
func TestSecurityNextLinkToAnotherOriginRefused(t *testing.T) {
	var elsewhere atomic.Int64
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		elsewhere.Add(1)
		http.Error(w, "not here", http.StatusTeapot)
	}))
	defer other.Close()
	e := proofStart(t, proofSetup{paging: true})
	linked := tally.Window{Start: prooftest.Day(t, "2026-01-15"), End: prooftest.Day(t, "2026-01-29"), Granularity: tally.Day}
	moved := tally.Window{Start: prooftest.Day(t, "2026-02-12"), End: prooftest.Day(t, "2026-02-26"), Granularity: tally.Day}
	e.faults.Set(func(w http.ResponseWriter, r *http.Request, q prooftest.Request) bool {
		switch {
		case q.Usage && q.Start == linked.Start.Format(tally.DateLayout):
			rec := prooftest.Record(e.sim, r)
			body := regexp.MustCompile(`"@odata.nextLink":"http://[^/"]+`).ReplaceAllString(rec.Body.String(), `"@odata.nextLink":"`+other.URL)
			prooftest.Send(w, rec, []byte(body))
			return true
		case q.Usage && q.Start == moved.Start.Format(tally.DateLayout):
			http.Redirect(w, r, other.URL+r.URL.Path, http.StatusTemporaryRedirect)
			return true
		}
		return false
	})
	_, err := e.fetch()
	var pe *job.Partial
	if !errors.As(err, &pe) || len(pe.Of(job.KindWindow)) != 2 || pe.Of(job.KindWindow)[0].Window != linked || pe.Of(job.KindWindow)[1].Window != moved {
		t.Fatalf("fetch returned %v, want a partial error naming %s and %s", err, linked, moved)
	}
	if !strings.Contains(pe.Of(job.KindWindow)[0].Err.Error(), "not on the base url's origin") {
		t.Errorf("the error does not say why the next link was refused:\n%v", pe.Of(job.KindWindow)[0].Err)
	}
	if !strings.Contains(pe.Of(job.KindWindow)[1].Err.Error(), "redirect to "+other.URL) || !strings.Contains(pe.Of(job.KindWindow)[1].Err.Error(), "refused") {
		t.Errorf("the error does not say why the redirect was refused:\n%v", pe.Of(job.KindWindow)[1].Err)
	}
	if n := elsewhere.Load(); n != 0 {
		t.Errorf("the other origin got %d requests", n)
	}
	span := e.span()
	prooftest.Exact(t, e.sim, e.db, e.query(span.Window.Start, linked.Start))
	prooftest.Exact(t, e.sim, e.db, e.query(linked.End, moved.Start))
	prooftest.Exact(t, e.sim, e.db, e.query(moved.End, span.Window.End))
	prooftest.NoToken(t, "the logs", e.logs.Bytes())
}

// TestSecurityTLSVerified: an https interface whose certificate nobody
// trusts. Every request fails on the certificate, is not retried, and no
// request reaches the handler (so no token was sent).
func TestSecurityTLSVerified(t *testing.T) {
	e := proofStart(t, proofSetup{tls: true})
	_, err := e.runner(nil).Fetch(context.Background(), FetchOptions{})
	if err == nil {
		t.Fatal("the fetch succeeded against a certificate nobody trusts")
	}
	if !strings.Contains(err.Error(), "certificate") {
		t.Errorf("the error does not name the certificate:\n%v", err)
	}
	if n := e.sim.Requests(); n != 0 {
		t.Errorf("%d requests reached the interface over an unverified connection", n)
	}
	if n := len(e.sleeps.all()); n != 0 {
		t.Errorf("a certificate failure was retried %d times", n)
	}
}
