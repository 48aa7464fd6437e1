package schedules

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tally-dev/tally"
	"github.com/tally-dev/tally/fetch/sim"
	"github.com/tally-dev/tally/internal/prooftest"
	"github.com/tally-dev/tally/job"
)

// The fault matrix: every fault the interface or the network can throw at
// a fetch, each ending with the store compared exactly to the sim's truth.
// Waits are recorded, not slept, so what a Retry-After or a backoff asked
// for is checked without waiting for it.

// proofWaitsWithin fails unless every recorded wait lies in [lo, hi].
func proofWaitsWithin(t *testing.T, waits []time.Duration, lo, hi time.Duration) {
	t.Helper()
	for _, d := range waits {
		if d < lo || d > hi {
			t.Errorf("a retry waited %s, want from %s to %s (all waits: %v)", d, lo, hi, waits)
			return
		}
	}
}

// proofResumed fails unless some page was cut after rows of it had gone
// into the window's transaction and was resumed: asked for again with the
// rows already taken skipped, not the window restarted.
func proofResumed(t *testing.T, e *proofEnv) {
	t.Helper()
	if !strings.Contains(string(e.logs.Bytes()), "resuming page") {
		t.Error("no page was resumed after rows were taken: the cut fell before any row")
	}
}

func TestFaultMatrix(t *testing.T) {
	usageOnly := func(rule prooftest.Rule) prooftest.Rule {
		return func(w http.ResponseWriter, r *http.Request, q prooftest.Request) bool {
			return q.Usage && rule(w, r, q)
		}
	}
	cases := []struct {
		name  string
		setup proofSetup
		rule  func(e *proofEnv) prooftest.Rule
		// faultsPerRequest is how many faulty answers each distinct request
		// gets; every one of them must have been answered and retried.
		faultsPerRequest int
		transportRetries bool // net/http may resend some of them itself
		check            func(t *testing.T, e *proofEnv)
	}{
		{
			name: "429 storm, Retry-After in seconds",
			rule: func(e *proofEnv) prooftest.Rule {
				return func(w http.ResponseWriter, r *http.Request, q prooftest.Request) bool {
					if q.Attempt > 3 {
						return false
					}
					prooftest.Error(w, http.StatusTooManyRequests, "7")
					return true
				}
			},
			faultsPerRequest: 3,
			check: func(t *testing.T, e *proofEnv) {
				proofWaitsWithin(t, e.sleeps.all(), 7*time.Second, 7*time.Second)
			},
		},
		{
			name: "429 storm, Retry-After as an HTTP date",
			rule: func(e *proofEnv) prooftest.Rule {
				return func(w http.ResponseWriter, r *http.Request, q prooftest.Request) bool {
					if q.Attempt > 3 {
						return false
					}
					prooftest.Error(w, http.StatusTooManyRequests, time.Now().Add(9*time.Second).UTC().Format(http.TimeFormat))
					return true
				}
			},
			faultsPerRequest: 3,
			check: func(t *testing.T, e *proofEnv) {
				// An HTTP date has whole seconds: 9 s ahead is 8 to 9 s away.
				proofWaitsWithin(t, e.sleeps.all(), 7*time.Second, 9*time.Second)
			},
		},
		{
			name: "429 storm, Retry-After 0",
			rule: func(e *proofEnv) prooftest.Rule {
				return func(w http.ResponseWriter, r *http.Request, q prooftest.Request) bool {
					if q.Attempt > 3 {
						return false
					}
					prooftest.Error(w, http.StatusTooManyRequests, "0")
					return true
				}
			},
			faultsPerRequest: 3,
			check: func(t *testing.T, e *proofEnv) {
				// 0 means "use your own backoff", never "retry at once": the
				// default policy's first three waits, jittered above half
				// the first delay.
				proofWaitsWithin(t, e.sleeps.all(), 250*time.Millisecond, 2*time.Second)
			},
		},
		{
			name: "429 storm, no Retry-After",
			rule: func(e *proofEnv) prooftest.Rule {
				return func(w http.ResponseWriter, r *http.Request, q prooftest.Request) bool {
					if q.Attempt > 3 {
						return false
					}
					prooftest.Error(w, http.StatusTooManyRequests, "")
					return true
				}
			},
			faultsPerRequest: 3,
			check: func(t *testing.T, e *proofEnv) {
				proofWaitsWithin(t, e.sleeps.all(), 250*time.Millisecond, 2*time.Second)
			},
		},
		{
			name: "burst of 500, 502, 503, 504",
			rule: func(e *proofEnv) prooftest.Rule {
				codes := []int{500, 502, 503, 504}
				return func(w http.ResponseWriter, r *http.Request, q prooftest.Request) bool {
					if q.Attempt > len(codes) {
						return false
					}
					prooftest.Error(w, codes[q.Attempt-1], "")
					return true
				}
			},
			faultsPerRequest: 4,
			check: func(t *testing.T, e *proofEnv) {
				proofWaitsWithin(t, e.sleeps.all(), 250*time.Millisecond, 4*time.Second)
			},
		},
		{
			name: "connections reset before the answer",
			rule: func(e *proofEnv) prooftest.Rule {
				return func(w http.ResponseWriter, r *http.Request, q prooftest.Request) bool {
					if q.Attempt > 2 {
						return false
					}
					prooftest.Reset(w)
					return true
				}
			},
			faultsPerRequest: 2,
			transportRetries: true,
		},
		{
			name: "JSON bodies cut mid-row",
			rule: func(e *proofEnv) prooftest.Rule {
				return func(w http.ResponseWriter, r *http.Request, q prooftest.Request) bool {
					if q.Attempt > 1 {
						return false
					}
					prooftest.Cut(w, r, e.sim, 0.5)
					return true
				}
			},
			faultsPerRequest: 1,
			check:            proofResumed,
		},
		{
			name:  "CSV bodies cut mid-row",
			setup: proofSetup{format: "csv"},
			rule: func(e *proofEnv) prooftest.Rule {
				return usageOnly(func(w http.ResponseWriter, r *http.Request, q prooftest.Request) bool {
					if q.Attempt > 1 {
						return false
					}
					prooftest.Cut(w, r, e.sim, 0.5)
					return true
				})
			},
			check: func(t *testing.T, e *proofEnv) {
				if e.faults.Faulty() == 0 {
					t.Error("no CSV answer was cut")
				}
				proofResumed(t, e)
			},
		},
		{
			name:  "answers slower than api.timeout",
			setup: proofSetup{timeout: "300ms"},
			rule: func(e *proofEnv) prooftest.Rule {
				// Usage and one reference request: each slow answer costs
				// a real timeout.
				return func(w http.ResponseWriter, r *http.Request, q prooftest.Request) bool {
					if q.Attempt > 1 || !q.Usage && !strings.HasSuffix(r.URL.Path, "/organization") {
						return false
					}
					prooftest.Wait(w, r, e.sim, 2*time.Second)
					return true
				}
			},
			check: func(t *testing.T, e *proofEnv) {
				if e.faults.Faulty() == 0 {
					t.Error("no answer was slow")
				}
			},
		},
		{
			name:  "answers that stall mid-body longer than api.timeout",
			setup: proofSetup{timeout: "300ms"},
			rule: func(e *proofEnv) prooftest.Rule {
				return usageOnly(func(w http.ResponseWriter, r *http.Request, q prooftest.Request) bool {
					if q.Attempt > 1 {
						return false
					}
					prooftest.Stall(w, r, e.sim, 2*time.Second)
					return true
				})
			},
			check: func(t *testing.T, e *proofEnv) {
				if e.faults.Faulty() == 0 {
					t.Error("no answer stalled")
				}
				proofResumed(t, e)
			},
		},
		{
			name:  "the interface refuses a range it should accept",
			setup: proofSetup{faults: sim.Faults{RefuseRangeDays: 5}},
			check: func(t *testing.T, e *proofEnv) {
				if !strings.Contains(string(e.logs.Bytes()), "usage range refused, splitting") {
					t.Error("no window was split: the logs never say so")
				}
			},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := proofStart(t, c.setup)
			if c.rule != nil {
				e.faults.Set(c.rule(e))
			}
			sum := e.mustFetch()
			if sum.RefErr != nil {
				t.Errorf("reference data not refreshed: %v", sum.RefErr)
			}
			if c.faultsPerRequest > 0 {
				if want := c.faultsPerRequest * e.faults.Distinct(); e.faults.Faulty() != want {
					t.Errorf("%d faulty answers, want %d (%d per request)", e.faults.Faulty(), want, c.faultsPerRequest)
				}
				// net/http itself resends a GET whose reused connection
				// was reset before any answer, so only answered faults
				// must each have cost a retry.
				if n := len(e.sleeps.all()); !c.transportRetries && n < e.faults.Faulty() {
					t.Errorf("%d retries for %d faulty answers", n, e.faults.Faulty())
				}
			}
			if c.check != nil {
				c.check(t, e)
			}
			prooftest.Exact(t, e.sim, e.db, e.span())
			prooftest.NoToken(t, "the logs", e.logs.Bytes())
		})
	}
}

// TestFaultConnectionRefusedThenBack starts the fetch while nothing listens
// on the interface's port; the port opens again after a few retries.
func TestFaultConnectionRefusedThenBack(t *testing.T) {
	e := proofStart(t, proofSetup{manual: true})
	e.sleeps.onSleep = func(n int) {
		if n == 3 {
			e.listen()
		}
	}
	e.mustFetch()
	if n := len(e.sleeps.all()); n < 3 {
		t.Fatalf("%d retries: the refused connections were not retried", n)
	}
	if !strings.Contains(string(e.logs.Bytes()), "connection refused") {
		t.Error("the logs never mention the refused connection")
	}
	prooftest.Exact(t, e.sim, e.db, e.span())

	// Down again in the middle of the next run's windows, then back.
	e.unlisten()
	e.clock.Set(e.clock.Now().Add(24 * time.Hour))
	before := len(e.sleeps.all())
	e.sleeps.onSleep = func(n int) {
		if n == before+2 {
			e.listen()
		}
	}
	e.mustFetch()
	prooftest.Exact(t, e.sim, e.db, e.span())
}

// TestFaultWindowFailingEveryRetry: one window's requests fail with 503
// until the retries run out. The run ends partial naming that window; the
// others are exact, the failed one holds nothing, and the next run fetches
// it.
func TestFaultWindowFailingEveryRetry(t *testing.T) {
	e := proofStart(t, proofSetup{attempts: 4})
	bad := tally.Window{Start: prooftest.Day(t, "2026-01-15"), End: prooftest.Day(t, "2026-01-29"), Granularity: tally.Day}
	e.faults.Set(func(w http.ResponseWriter, r *http.Request, q prooftest.Request) bool {
		if q.Usage && q.Start == bad.Start.Format(tally.DateLayout) {
			prooftest.Error(w, http.StatusServiceUnavailable, "")
			return true
		}
		return false
	})
	sum, err := e.fetch()
	var pe *job.Partial
	if !errors.As(err, &pe) {
		t.Fatalf("fetch returned %v, want a *job.Partial", err)
	}
	if len(pe.Of(job.KindWindow)) != 1 || pe.Of(job.KindWindow)[0].Window != bad {
		t.Fatalf("failed windows %v, want only %s", pe.Of(job.KindWindow), bad)
	}
	if msg := err.Error(); !strings.Contains(msg, bad.String()) || !strings.Contains(msg, "503") || !strings.Contains(msg, "give up after 4 attempts") {
		t.Errorf("the error does not say which window failed, how, and after how many attempts:\n%s", msg)
	}
	if sum.Loaded != sum.Planned-1 {
		t.Errorf("%d of %d windows loaded, want all but one", sum.Loaded, sum.Planned)
	}
	start, end := prooftest.Day(t, e.s.start), e.span().Window.End
	prooftest.Exact(t, e.sim, e.db, e.query(start, bad.Start))
	prooftest.Exact(t, e.sim, e.db, e.query(bad.End, end))
	prooftest.WithDB(t, e.db, func(db *sql.DB) {
		rows, _ := prooftest.StoredQuery(t, db, e.query(bad.Start, bad.End))
		var ledger int
		if err := db.QueryRow(`SELECT count(*) FROM fetch_windows WHERE start < ? AND "end" > ?`, bad.End, bad.Start).Scan(&ledger); err != nil {
			t.Fatal(err)
		}
		if len(rows) != 0 || ledger != 0 {
			t.Errorf("the failed window holds %d rows and %d ledger entries, want none", len(rows), ledger)
		}
	})

	e.faults.Set(nil)
	e.mustFetch()
	prooftest.Exact(t, e.sim, e.db, e.span())
}

// TestFaultLateChargesRevisedBetweenRuns: charges arrive after the first
// run (dateProcessed goes from null to a day, and rows move between
// reported-date windows); the next run's lookback brings the store to the
// new truth, by usage date and by reported date.
func TestFaultLateChargesRevisedBetweenRuns(t *testing.T) {
	for _, reported := range []bool{false, true} {
		t.Run(fmt.Sprintf("reported_date=%t", reported), func(t *testing.T) {
			e := proofStart(t, proofSetup{reported: reported})
			e.mustFetch()
			prooftest.Exact(t, e.sim, e.db, e.span())

			recent := e.query(prooftest.Day(t, "2026-03-08"), prooftest.Day(t, "2026-03-12"))
			was := prooftest.RenderAll(e.sim.Rows(recent))
			e.clock.Set(e.clock.Now().Add(30 * time.Hour))
			if prooftest.FirstDiff(prooftest.RenderAll(e.sim.Rows(recent)), was) == "" {
				t.Fatal("the sim revised nothing between the runs: the test proves nothing")
			}
			e.mustFetch()
			prooftest.Exact(t, e.sim, e.db, e.span())
		})
	}
}

// TestFaultConcurrentWindowsOverlapOneOlderEntry: a rerun whose lookback
// plans two windows that both overlap the previous run's last window,
// loading at the same time. Both load, and the ledger ends with no day
// twice.
func TestFaultConcurrentWindowsOverlapOneOlderEntry(t *testing.T) {
	e := proofStart(t, proofSetup{})
	e.mustFetch()
	e.clock.Set(e.clock.Now().Add(24 * time.Hour))
	rerun := e.configWith(e.dir, func(s *proofSetup) { s.lookback = "20d" })
	sum, err := e.runner(rerun).Fetch(context.Background(), FetchOptions{})
	if err != nil {
		t.Fatalf("rerun: %v", err)
	}
	if sum.Planned != 2 || sum.Loaded != 2 {
		t.Fatalf("rerun loaded %d of %d windows, want 2 of 2", sum.Loaded, sum.Planned)
	}
	prooftest.Exact(t, e.sim, e.db, e.span())
	prooftest.WithDB(t, e.db, func(db *sql.DB) {
		var overlaps int
		if err := db.QueryRow(`SELECT count(*) FROM fetch_windows a JOIN fetch_windows b
ON a.granularity = b.granularity AND a.basis = b.basis AND a.scope = b.scope
AND a.start < b."end" AND b.start < a."end" AND (a.start, a."end") < (b.start, b."end")`).Scan(&overlaps); err != nil {
			t.Fatal(err)
		}
		if overlaps > 0 {
			t.Errorf("%d pairs of ledger entries overlap", overlaps)
		}
	})
}

// largeWindowCases are issue 11's measure: the largest windows the planner
// makes, 500-row pages, and 10% cut bodies, 15% 429 and 10% 5xx.
var largeWindowCases = []struct {
	name     string
	g        tally.Granularity
	window   string // the largest the granularity allows
	now      string
	windows  int
	minPages int64
}{
	{"173-day day backfill, one window", tally.Day, "1y", "2026-06-22T12:00:00Z", 1, 4},
	{"81-day hourly backfill", tally.Hour, "31d", "2026-03-22T12:00:00Z", 3, 40},
}

func largeWindowFaults(seed int64) sim.Faults {
	return sim.Faults{Seed: seed, Cut: 0.10, RateLimit: 0.15, ServerError: 0.10}
}

// TestFaultLargestWindowsManyPages: the largest windows the planner makes,
// answered in many 500-row pages with 10% of bodies cut, 15% 429 and 10%
// 5xx, end exact. A cut page is resumed, not its window restarted, so a
// window of dozens of pages loads although few pages in a row come
// through unharmed. The requests sent against a fault-free fetch of the
// same span are logged, not asserted (issue 11 asks at most 1.6):
//
//	go test ./schedules -run TestFaultLargestWindowsManyPages -v
func TestFaultLargestWindowsManyPages(t *testing.T) {
	const seeds = 5
	for _, c := range largeWindowCases {
		t.Run(c.name, func(t *testing.T) {
			var faulty, retries int64
			resumed := false
			var pages int64
			for seed := int64(11); seed < 11+seeds; seed++ {
				h := newHarness(t, setup{granularity: c.g, start: "2026-01-01", now: c.now, window: c.window, paging: true, faults: largeWindowFaults(seed)})
				sum := h.mustFetch()
				if sum.Planned != c.windows || sum.Loaded != c.windows {
					t.Fatalf("seed %d: planned %d, loaded %d windows; want %d", seed, sum.Planned, sum.Loaded, c.windows)
				}
				pages = int64(h.sim.Truth(h.span()).Rows+499) / 500
				if pages < c.minPages {
					t.Fatalf("%d pages: the case does not test many pages", pages)
				}
				if strings.Contains(h.logs.String(), "starting it over") {
					t.Errorf("seed %d: a window was started over; a cut page should be resumed", seed)
				}
				resumed = resumed || strings.Contains(h.logs.String(), "resuming page")
				h.wantExact(h.db, fmt.Sprintf("%s, seed %d", c.name, seed), h.span())
				faulty += sum.Requests
				retries += sum.Retries
			}
			if !resumed {
				t.Error("no page was resumed: the faults never cut a page after its first rows")
			}
			clean := newHarness(t, setup{granularity: c.g, start: "2026-01-01", now: c.now, window: c.window, paging: true})
			base := clean.mustFetch()
			// With 35% of requests faulty, 1/(1-0.35) = 1.54 requests a
			// request is what any client needs on average.
			t.Logf("%s: %d pages; over %d seeds %.1f requests a fetch through the faults (%.1f retries), %d without: ratio %.2f",
				c.name, pages, seeds, float64(faulty)/seeds, float64(retries)/seeds, base.Requests, float64(faulty)/seeds/float64(base.Requests))
		})
	}
}

// TestFaultStubbornWindowIsSplit: one window's answers are cut after rows
// every time, so its page fails every retry on both of the window's
// attempts. The window is split in two bucket-aligned halves, each loaded
// and recorded in the ledger on its own; the split is in the log and in
// fetch_windows, and the store ends exact.
func TestFaultStubbornWindowIsSplit(t *testing.T) {
	e := proofStart(t, proofSetup{attempts: 3})
	bad := tally.Window{Start: prooftest.Day(t, "2026-01-01"), End: prooftest.Day(t, "2026-01-15"), Granularity: tally.Day}
	e.faults.Set(func(w http.ResponseWriter, r *http.Request, q prooftest.Request) bool {
		if q.Usage && q.Start == "2026-01-01" && q.End == "2026-01-15" {
			prooftest.Cut(w, r, e.sim, 0.6)
			return true
		}
		return false
	})
	sum := e.mustFetch()
	logs := string(e.logs.Bytes())
	if !strings.Contains(logs, "splitting it in two") || !strings.Contains(logs, "2026-01-01..2026-01-08 2026-01-08..2026-01-15") {
		t.Errorf("the split of %s is not in the log", bad)
	}
	if n := strings.Count(logs, "starting it over"); n != 2 {
		t.Errorf("the window was started over %d times, want twice (both attempts failed) before the split", n)
	}
	if sum.Loaded != sum.Planned {
		t.Errorf("loaded %d of %d windows", sum.Loaded, sum.Planned)
	}
	prooftest.WithDB(t, e.db, func(db *sql.DB) {
		got := prooftest.QueryStrings(t, db, `SELECT strftime(start, '%Y-%m-%d') || '..' || strftime("end", '%Y-%m-%d') FROM fetch_windows WHERE start < DATE '2026-01-15' ORDER BY start`)
		if want := []string{"2026-01-01..2026-01-08", "2026-01-08..2026-01-15"}; !slices.Equal(got, want) {
			t.Errorf("ledger holds %v for the split window, want its halves %v", got, want)
		}
	})
	prooftest.Exact(t, e.sim, e.db, e.span())
}
