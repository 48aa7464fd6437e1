package schedules

import (
	"context"
	"database/sql"
	"errors"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tally-dev/tally"
	"github.com/tally-dev/tally/internal/prooftest"
	"github.com/tally-dev/tally/job"
	"github.com/tally-dev/tally/store"
)

// TestFetchThroughFaults fetches several windows through every kind of
// fault, then fetches again unchanged, then again after the clock has moved
// and late charges revised recent rows: the store equals the sim's truth
// every time, exactly.
func TestFetchThroughFaults(t *testing.T) {
	for _, s := range []setup{
		// 21 days in 7-day hour windows.
		{granularity: tally.Hour, start: "2025-02-10", now: "2025-03-03T14:30:00Z", faults: faults(11)},
		// Two months in 7-day day windows, answers paged.
		{granularity: tally.Day, start: "2025-01-01", now: "2025-03-03T14:30:00Z", faults: faults(12), paging: true},
	} {
		t.Run(string(s.granularity), func(t *testing.T) {
			h := newHarness(t, s)

			first := h.mustFetch()
			if first.Planned < 3 {
				t.Fatalf("planned %d windows; the test wants several", first.Planned)
			}
			if first.Retries == 0 {
				t.Fatalf("no retries: the faults were not exercised (%+v)", first)
			}
			h.wantExact(h.db, "first fetch", h.span())
			h.wantExact(store.PublishedPath(h.db), "published copy of the first fetch", h.span())
			before := prooftest.Dump(t, h.db)

			second := h.mustFetch()
			if second.Planned >= first.Planned {
				t.Errorf("second fetch planned %d windows, the first %d: only the lookback should be fetched again", second.Planned, first.Planned)
			}
			if d := prooftest.FirstDiff(prooftest.Dump(t, h.db), before); d != "" {
				t.Errorf("a second identical fetch changed the usage table: %s", d)
			}

			// Move the clock a day and five hours on: hours charged since
			// are revised (processed, larger), and new hours appear.
			oldSpan := h.span()
			oldTruth := h.sim.Truth(oldSpan)
			h.clock.Set(h.clock.Now().Add(29 * time.Hour))
			if d := prooftest.SameTotals(h.sim.Truth(oldSpan).Cost, oldTruth.Cost); d == "" {
				t.Fatal("moving the clock revised nothing in the loaded span; the test checks nothing")
			}
			h.mustFetch()
			h.wantExact(h.db, "after the revision", h.span())
			h.wantExact(store.PublishedPath(h.db), "published copy after the revision", h.span())
			if o := ledgerOverlaps(t, h.db); len(o) > 0 {
				t.Errorf("ledger has overlapping windows: %q", o)
			}
			// tally status adds the ledger's row counts up.
			prooftest.WithDB(t, h.db, func(db *sql.DB) {
				var ledgerRows, rows int64
				if err := db.QueryRow(`SELECT (SELECT sum(rows)::BIGINT FROM fetch_windows), (SELECT count(*) FROM usage)`).Scan(&ledgerRows, &rows); err != nil {
					t.Fatal(err)
				}
				if ledgerRows != rows {
					t.Errorf("the ledger counts %d rows, usage holds %d", ledgerRows, rows)
				}
			})
		})
	}
}

// TestFetchCancelledThenRerun cancels a fetch after some windows were
// loaded: each window is fully old or fully new, the run is recorded as
// failed, and the next run ends exact with no window loaded twice.
func TestFetchCancelledThenRerun(t *testing.T) {
	for _, s := range []setup{
		{granularity: tally.Hour, start: "2025-01-20", now: "2025-03-03T14:30:00Z", faults: faults(22)},
		{granularity: tally.Day, start: "2025-01-01", now: "2025-03-03T14:30:00Z", faults: faults(21)},
	} {
		t.Run(string(s.granularity), func(t *testing.T) { fetchCancelledThenRerun(t, s) })
	}
}

func fetchCancelledThenRerun(t *testing.T, s setup) {
	h := newHarness(t, s)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// A worker asks for its next window only after loading the last one:
	// when the fifth distinct window is asked for, at least two are in.
	var mu sync.Mutex
	seen := map[string]bool{}
	h.setIntercept(func(w http.ResponseWriter, r *http.Request) bool {
		start, ok := usageStart(r)
		if !ok {
			return false
		}
		mu.Lock()
		defer mu.Unlock()
		seen[start] = true
		if len(seen) == 5 {
			cancel()
		}
		return false
	})
	sum, err := h.fetch(ctx)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled fetch: %v, want context.Canceled", err)
	}
	if sum.Loaded < 2 || sum.Loaded >= sum.Planned {
		t.Fatalf("cancelled fetch loaded %d of %d windows; want some but not all", sum.Loaded, sum.Planned)
	}
	h.setIntercept(nil)

	// What is in is whole: every ledger window holds exactly its truth,
	// and no row lies outside the ledger.
	var loaded []tally.Window
	prooftest.WithDB(t, h.db, func(db *sql.DB) {
		var status, msg string
		if err := db.QueryRow(`SELECT status, error FROM runs`).Scan(&status, &msg); err != nil {
			t.Fatal(err)
		}
		if status != "failed" || !strings.Contains(msg, "cancelled") {
			t.Errorf("cancelled run recorded as %s: %s", status, msg)
		}
		rows, err := db.Query(`SELECT start, "end" FROM fetch_windows ORDER BY start`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		for rows.Next() {
			w := tally.Window{Granularity: s.granularity}
			if err := rows.Scan(&w.Start, &w.End); err != nil {
				t.Fatal(err)
			}
			w.Start, w.End = w.Start.UTC(), w.End.UTC()
			loaded = append(loaded, w)
		}
	})
	for _, l := range strings.Split(h.logs.String(), "\n") {
		if strings.Contains(l, "\"window\"") {
			t.Log(l)
		}
	}
	if len(loaded) != sum.Loaded {
		t.Fatalf("ledger holds %d windows, the fetch says it loaded %d", len(loaded), sum.Loaded)
	}
	inLedger := 0
	for _, w := range loaded {
		q := h.query(w.Start, w.End)
		h.wantExact(h.db, "window "+w.String()+" loaded before the cancel", q)
		inLedger += h.sim.Truth(q).Rows
	}
	prooftest.WithDB(t, h.db, func(db *sql.DB) {
		if _, n := prooftest.Totals(t, db, s.granularity, "usage", prooftest.Day(t, "2000-01-01"), prooftest.Day(t, "2100-01-01")); n != inLedger {
			t.Errorf("usage holds %d rows, the ledger's windows %d: rows outside any loaded window", n, inLedger)
		}
	})

	rerun := h.mustFetch()
	if rerun.Planned > sum.Planned-sum.Loaded+2 {
		t.Errorf("rerun planned %d windows; %d were missing (plus the lookback)", rerun.Planned, sum.Planned-sum.Loaded)
	}
	h.wantExact(h.db, "after the rerun", h.span())
	if o := ledgerOverlaps(t, h.db); len(o) > 0 {
		t.Errorf("ledger has overlapping windows: %q", o)
	}
}

// TestFetchWindowFailingEveryRetry answers 503 to every request for one
// window: the fetch is partial and names it, the other windows are exact,
// and the next run, with the fault gone, repairs it.
func TestFetchWindowFailingEveryRetry(t *testing.T) {
	for _, s := range []setup{
		{granularity: tally.Hour, start: "2025-02-03", now: "2025-03-03T14:30:00Z", faults: faults(32)},
		{granularity: tally.Day, start: "2025-01-01", now: "2025-03-03T14:30:00Z", faults: faults(31)},
	} {
		t.Run(string(s.granularity), func(t *testing.T) { fetchWindowFailingEveryRetry(t, s) })
	}
}

func fetchWindowFailingEveryRetry(t *testing.T, s setup) {
	h := newHarness(t, s)
	plan, _, err := PlanWindows(context.Background(), h.runner.Config, nil, FetchOptions{}, h.clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	bad := plan[2].Window
	var attempts int
	var mu sync.Mutex
	h.setIntercept(func(w http.ResponseWriter, r *http.Request) bool {
		if start, ok := usageStart(r); ok && start == bad.Start.Format(tally.DateLayout) {
			mu.Lock()
			attempts++
			mu.Unlock()
			unavailable(w)
			return true
		}
		return false
	})
	sum, err := h.fetch(context.Background())
	var pe *job.Partial
	if !errors.As(err, &pe) {
		t.Fatalf("fetch: %v, want a *job.Partial", err)
	}
	if len(pe.Of(job.KindWindow)) != 1 || pe.Of(job.KindWindow)[0].Window != bad || len(pe.Of(job.KindReference)) != 0 {
		t.Fatalf("partial error lists %+v (reference error %v), want only window %s", pe.Of(job.KindWindow), pe.Of(job.KindReference), bad)
	}
	if !strings.Contains(err.Error(), bad.String()) {
		t.Errorf("error %q does not name window %s", err, bad)
	}
	if attempts != fastRetry().MaxAttempts {
		t.Errorf("the failing window was asked for %d times, want %d (the retry budget, not more)", attempts, fastRetry().MaxAttempts)
	}
	if sum.Loaded != len(plan)-1 || sum.Published == "" {
		t.Errorf("loaded %d of %d windows, published %q", sum.Loaded, len(plan), sum.Published)
	}
	for _, pw := range plan {
		if pw.Window == bad {
			continue
		}
		h.wantExact(h.db, "window "+pw.String()+" beside the failed one", h.query(pw.Start, pw.End))
	}
	prooftest.WithDB(t, h.db, func(db *sql.DB) {
		if _, n := prooftest.Totals(t, db, s.granularity, "usage", bad.Start, bad.End); n != 0 {
			t.Errorf("the failed window holds %d rows", n)
		}
		var status, msg string
		if err := db.QueryRow(`SELECT status, error FROM runs`).Scan(&status, &msg); err != nil {
			t.Fatal(err)
		}
		if status != "partial" || !strings.Contains(msg, bad.String()) {
			t.Errorf("run recorded as %s: %s", status, msg)
		}
	})

	h.setIntercept(nil)
	st, err := store.Open(context.Background(), h.db, store.ReadOnly())
	if err != nil {
		t.Fatal(err)
	}
	next, _, err := PlanWindows(context.Background(), h.runner.Config, st, FetchOptions{}, h.clock.Now())
	st.Close()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(next, func(pw tally.PlannedWindow) bool {
		return pw.Window == bad && pw.Reason == tally.ReasonMissing
	}) {
		t.Errorf("the next plan %v does not fetch the failed window %s as missing", next, bad)
	}
	h.mustFetch()
	h.wantExact(h.db, "after the repair", h.span())
}

// TestFetchReportedBasis fetches with filterOnReportedDate: rows land with
// basis 'reported' and equal the truth of the reported query.
func TestFetchReportedBasis(t *testing.T) {
	for _, s := range []setup{
		{granularity: tally.Day, start: "2025-01-10", now: "2025-03-03T14:30:00Z", reported: true, faults: faults(41)},
		{granularity: tally.Hour, start: "2025-02-16", now: "2025-03-03T14:30:00Z", reported: true, faults: faults(42)},
	} {
		t.Run(string(s.granularity), func(t *testing.T) {
			h := newHarness(t, s)
			h.mustFetch()
			q := h.span()
			if q.Basis() != tally.BasisReported {
				t.Fatal("the query is not on the reported basis")
			}
			h.wantExact(h.db, "reported basis", q)
			prooftest.WithDB(t, h.db, func(db *sql.DB) {
				var other, uncharged int
				if err := db.QueryRow(`SELECT count(*) FILTER (basis <> 'reported'), count(*) FILTER (date_processed IS NULL) FROM usage`).Scan(&other, &uncharged); err != nil {
					t.Fatal(err)
				}
				if other != 0 || uncharged != 0 {
					t.Errorf("%d rows not on the reported basis, %d not yet charged", other, uncharged)
				}
			})
			// The usage-basis truth of the same span differs: the test
			// would notice rows filtered on the wrong date.
			uq := q
			uq.ReportedDate = false
			if prooftest.SameTotals(h.sim.Truth(uq).Cost, h.sim.Truth(q).Cost) == "" {
				t.Fatal("usage and reported truths are equal; the test cannot tell the bases apart")
			}
		})
	}
}

// TestPublishedCopyWhileFetching reads the analysts' copy from a second
// handle while a fetch is held mid-window: the reader sees the previous
// complete state, and the fetch finishes and publishes while the reader
// still has the old copy open.
func TestPublishedCopyWhileFetching(t *testing.T) {
	h := newHarness(t, setup{granularity: tally.Day, start: "2025-01-20", now: "2025-03-03T14:30:00Z"})
	h.mustFetch()
	published := store.PublishedPath(h.db)
	oldSpan := h.span()
	oldTruth := h.sim.Truth(oldSpan)

	h.clock.Set(h.clock.Now().Add(26 * time.Hour))
	newSpan := h.span()
	if prooftest.SameTotals(h.sim.Truth(newSpan).Cost, oldTruth.Cost) == "" {
		t.Fatal("the clock moved but the truth did not; the test checks nothing")
	}
	// Hold the first usage answer until the reader is done: a slow answer
	// that keeps the fetch busy for as long as the test needs.
	busy, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	h.setIntercept(func(w http.ResponseWriter, r *http.Request) bool {
		if _, ok := usageStart(r); ok {
			once.Do(func() { close(busy) })
			<-release
		}
		return false
	})
	done := make(chan error, 1)
	go func() {
		_, err := h.fetch(context.Background())
		done <- err
	}()
	select {
	case <-busy:
	case err := <-done:
		t.Fatalf("fetch ended before asking for usage: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("fetch never asked for usage")
	}

	reader, err := store.Open(context.Background(), published, store.ReadOnly())
	if err != nil {
		close(release)
		t.Fatalf("open the published copy while a fetch runs: %v", err)
	}
	closeReader := sync.OnceFunc(func() { reader.Close() })
	defer closeReader()
	readTotals := func(label string) {
		t.Helper()
		got, n := prooftest.Totals(t, reader.DB(), tally.Day, "usage", oldSpan.Window.Start, newSpan.Window.End)
		if d := prooftest.SameTotals(got, oldTruth.Cost); d != "" || n != oldTruth.Rows {
			t.Errorf("%s: the reader sees %d rows (previous state %d), totals differ: %s", label, n, oldTruth.Rows, d)
		}
	}
	readTotals("during the fetch")
	select {
	case err := <-done:
		t.Fatalf("fetch finished while its usage answer was held: %v", err)
	default:
	}
	close(release)
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("fetch with a reader on the published copy: %v", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("the fetch is blocked while a reader has the published copy open")
	}
	// The open session keeps the copy it opened; a new one sees the new.
	// DuckDB shares one instance per path within a process, so the old
	// session is closed first; an analyst's own process needs no such step.
	readTotals("after the fetch, same session")
	closeReader()
	h.wantExact(published, "published copy after the fetch", newSpan)
}

// The numbers need payment methods, rate cards and projects; the
// organization and locations only describe. An optional resource the
// interface does not offer (404) or the token may not read (403) is a
// warning recorded on the run, which stays ok; a needed one, or an
// optional one failing otherwise (5xx every retry), makes the run partial
// naming it, and the previous snapshot stays.
func TestOptionalReferenceResources(t *testing.T) {
	warnings := func(t *testing.T, h *harness) string {
		t.Helper()
		var w sql.NullString
		prooftest.WithDB(t, h.db, func(db *sql.DB) {
			if err := db.QueryRow(`SELECT warnings FROM runs ORDER BY started DESC LIMIT 1`).Scan(&w); err != nil {
				t.Fatal(err)
			}
		})
		return w.String
	}
	for _, c := range []struct {
		name, resource string
		status         int
		warning        string
	}{
		{"organization missing", "organization", http.StatusNotFound, "organization: "},
		{"locations forbidden", "locations", http.StatusForbidden, "locations: "},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t, setup{granularity: "day", start: "2026-09-01", now: "2026-09-20T12:00:00Z", deny: map[string]int{c.resource: c.status}})
			sum, err := h.fetch(context.Background())
			if err != nil {
				t.Fatalf("an optional resource answering %d made the fetch fail: %v", c.status, err)
			}
			if len(sum.Warnings) != 1 || !strings.HasPrefix(sum.Warnings[0], c.warning) || !strings.Contains(sum.Warnings[0], strconv.Itoa(c.status)) {
				t.Errorf("warnings %q, want one naming %s and %d", sum.Warnings, c.resource, c.status)
			}
			if w := warnings(t, h); !strings.HasPrefix(w, c.warning) || !strings.Contains(w, "optional") {
				t.Errorf("runs.warnings %q, want the warning recorded on the run", w)
			}
			h.wantExact(h.db, c.name, h.span())
		})
	}

	t.Run("projects forbidden", func(t *testing.T) {
		h := newHarness(t, setup{granularity: "day", start: "2026-09-01", now: "2026-09-20T12:00:00Z"})
		h.mustFetch()
		h.setIntercept(func(w http.ResponseWriter, r *http.Request) bool {
			if r.URL.Path == "/api/v1/projects" {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusForbidden)
				io.WriteString(w, `{"error":{"code":"Forbidden","detail":"the token may not read projects"},"ref":"r-1","status":403}`)
				return true
			}
			return false
		})
		_, err := h.fetch(context.Background())
		var pe *job.Partial
		if !errors.As(err, &pe) || !strings.Contains(err.Error(), "projects: ") || !strings.Contains(err.Error(), "403") {
			t.Fatalf("fetch: %v; want partial naming projects and the 403", err)
		}
		prooftest.WithDB(t, h.db, func(db *sql.DB) {
			var n int
			if err := db.QueryRow(`SELECT count(*) FROM projects`).Scan(&n); err != nil || n == 0 {
				t.Errorf("the previous projects snapshot is gone (%d projects, %v)", n, err)
			}
		})
	})

	t.Run("organization failing every retry", func(t *testing.T) {
		h := newHarness(t, setup{granularity: "day", start: "2026-09-01", now: "2026-09-20T12:00:00Z"})
		down := func(w http.ResponseWriter, r *http.Request) bool {
			if r.URL.Path == "/api/v1/organization" {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusServiceUnavailable)
				io.WriteString(w, `{"error":{"code":"ServiceUnavailable","detail":"down"},"ref":"r-2","status":503}`)
				return true
			}
			return false
		}
		// The first fetch names the store's organization from the
		// interface: an outage then fails it, loading and naming
		// nothing, rather than name the organization for good.
		h.setIntercept(down)
		_, err := h.fetch(context.Background())
		var pe *job.Partial
		if err == nil || errors.As(err, &pe) || !strings.Contains(err.Error(), "names the store's organization") {
			t.Fatalf("first fetch: %v; want it to fail, naming the organization", err)
		}
		prooftest.WithDB(t, h.db, func(db *sql.DB) {
			var rows, orgs int
			if err := db.QueryRow(`SELECT (SELECT count(*) FROM usage), (SELECT count(*) FROM organizations)`).Scan(&rows, &orgs); err != nil || rows != 0 || orgs != 0 {
				t.Errorf("after the failed first fetch: %d usage rows, %d organizations (%v); want none", rows, orgs, err)
			}
		})
		// Later, the organization is optional like the other references.
		h.setIntercept(nil)
		h.mustFetch()
		h.setIntercept(down)
		_, err = h.fetch(context.Background())
		if !errors.As(err, &pe) || !strings.Contains(err.Error(), "organization: ") {
			t.Fatalf("fetch: %v; want partial naming the organization", err)
		}
	})
}
