package schedules

import (
	"archive/zip"
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/tally-dev/tally/configs"
	"github.com/tally-dev/tally/fetch"
	"github.com/tally-dev/tally/fetch/sim"
	"github.com/tally-dev/tally/store"
)

// testToken is the bearer token of every test; tests check it never lands
// in logs, database files or workbooks.
const testToken = "tok-5e3c1a9f07d24b68b1e0c4a7d92f36e8"

// clock is the one clock of a test: the sim's and the runner's.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}

// fastRetry retries as often as the default policy but never really waits:
// Sleep returns at once (or with the context's error).
func fastRetry() *fetch.RetryPolicy {
	return &fetch.RetryPolicy{
		MaxAttempts: 9,
		BaseDelay:   time.Millisecond,
		MaxDelay:    5 * time.Millisecond,
		MaxElapsed:  time.Minute,
		Sleep:       func(ctx context.Context, _ time.Duration) error { return ctx.Err() },
	}
}

// faults are the faults every fetch test runs through: 429 with and
// without Retry-After, 5xx, cut bodies and slow answers.
func faults(seed int64) sim.Faults {
	return sim.Faults{
		Seed: seed, RateLimit: 0.06, RateLimitBare: 0.06, ServerError: 0.08, Cut: 0.05,
		Slow: 0.05, SlowDelay: 5 * time.Millisecond,
	}
}

// setup describes one test's interface and config.
type setup struct {
	granularity fetch.Granularity
	start, now  string // usage.start (YYYY-MM-DD) and the clock (RFC 3339)
	window      string // usage.window
	lookback    string // usage.lookback
	reported    bool
	faults      sim.Faults
	paging      bool           // JSON usage answers paged every 500 rows
	months      []string       // reports.months
	deny        map[string]int // sim resources answered 403 or 404 (sim.Options.Deny)
}

// harness is a simulated interface behind an httptest server, a runner
// configured against it in a temp folder, and the logs it wrote.
type harness struct {
	t      *testing.T
	s      setup
	dir    string
	db     string
	clock  *clock
	sim    *sim.Server
	srv    *httptest.Server
	logs   *bytes.Buffer
	runner *Runner

	mu        sync.Mutex
	intercept func(w http.ResponseWriter, r *http.Request) bool
}

func newHarness(t *testing.T, s setup) *harness {
	t.Helper()
	if s.window == "" {
		s.window = "7d"
	}
	if s.lookback == "" {
		s.lookback = "2d"
	}
	now, err := time.Parse(time.RFC3339, s.now)
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, s: s, dir: t.TempDir(), clock: &clock{t: now}, logs: &bytes.Buffer{}}
	h.db = filepath.Join(h.dir, "tally.duckdb")
	h.sim = sim.New(sim.Options{
		Token: testToken, Seed: 3, Start: day(t, s.start), Now: h.clock.Now,
		PageSize: 500, UsagePaging: s.paging, Faults: s.faults, Deny: s.deny,
	})
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.mu.Lock()
		f := h.intercept
		h.mu.Unlock()
		if f != nil && f(w, r) {
			return
		}
		h.sim.ServeHTTP(w, r)
	}))
	t.Cleanup(h.srv.Close)

	months := s.months
	if months == nil {
		months = []string{}
	}
	quoted := make([]string, len(months))
	for i, m := range months {
		quoted[i] = strconv.Quote(m)
	}
	yaml := fmt.Sprintf(`api:
  base_url: %s
  concurrency: 3
  timeout: 20s
usage:
  granularity: %s
  start: %s
  lookback: %s
  window: %s
  reported_date: %t
store:
  path: tally.duckdb
reports:
  dir: reports
  months: [%s]
schedule:
  lock_wait: 200ms
  grace: 0s # a cancel also stops the windows in flight: they must roll back whole
`, h.srv.URL, s.granularity, s.start, s.lookback, s.window, s.reported, strings.Join(quoted, ", "))
	cfg, err := configs.Parse([]byte(yaml), h.dir, nil)
	if err != nil {
		t.Fatalf("config:\n%s\n%v", yaml, err)
	}
	log := zerolog.New(zerolog.SyncWriter(h.logs)).Level(zerolog.DebugLevel).With().Timestamp().Logger()
	h.runner = &Runner{Config: cfg, Token: testToken, Log: log, Version: "test", Now: h.clock.Now, retry: fastRetry()}
	t.Cleanup(func() { h.checkNoToken() })
	return h
}

// setIntercept installs f in front of the sim: when f returns true it has
// answered the request.
func (h *harness) setIntercept(f func(w http.ResponseWriter, r *http.Request) bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.intercept = f
}

// usageStart reads the startDate of a usage POST and puts the body back
// for the sim; ok is false for any other request.
func usageStart(r *http.Request) (start string, ok bool) {
	if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/reports/usage") {
		return "", false
	}
	b, err := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(b))
	if err != nil {
		return "", false
	}
	var body struct {
		StartDate string `json:"startDate"`
	}
	if json.Unmarshal(b, &body) != nil {
		return "", false
	}
	return body.StartDate, true
}

// unavailable answers 503 with the interface's error body.
func unavailable(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusServiceUnavailable)
	io.WriteString(w, `{"error":{"code":"ServiceUnavailable","detail":"the service is temporarily unavailable; retry later"}}`)
}

func day(t testing.TB, s string) time.Time {
	t.Helper()
	d, err := fetch.ParseDate(s)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// query is the usage query of [from, to) in the harness's granularity and
// basis.
func (h *harness) query(from, to time.Time) fetch.UsageQuery {
	return fetch.UsageQuery{
		Window:       fetch.Window{Start: from, End: to, Granularity: h.s.granularity},
		ReportedDate: h.s.reported,
	}
}

// span is everything a fetch with default options covers at the clock's
// time: usage.start to tomorrow.
func (h *harness) span() fetch.UsageQuery {
	return h.query(day(h.t, h.s.start), fetch.Day.Truncate(h.clock.Now()).AddDate(0, 0, 1))
}

func (h *harness) basis() string { return string(h.span().Basis()) }

// fetch runs one recorded fetch like `tally fetch`.
func (h *harness) fetch(ctx context.Context) (FetchSummary, error) {
	return h.runner.Fetch(ctx, FetchOptions{})
}

func (h *harness) mustFetch() FetchSummary {
	h.t.Helper()
	sum, err := h.fetch(context.Background())
	if err != nil {
		h.t.Fatalf("fetch: %v", err)
	}
	if sum.Loaded != sum.Planned || sum.Planned == 0 {
		h.t.Fatalf("fetch loaded %d of %d windows", sum.Loaded, sum.Planned)
	}
	return sum
}

// withDB opens a database file read-only for fn; no run may hold it.
func withDB(t testing.TB, path string, fn func(db *sql.DB)) {
	t.Helper()
	st, err := store.OpenReadOnly(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	fn(st.DB())
}

// stored reads the usage rows of one granularity and basis back as the
// client decoded them.
func stored(t testing.TB, db *sql.DB, g fetch.Granularity, basis string, from, to time.Time) []fetch.MeterData {
	t.Helper()
	rows, _ := storedRuns(t, db, g, basis, from, to)
	return rows
}

// storedRuns is stored with the run id that wrote each row.
func storedRuns(t testing.TB, db *sql.DB, g fetch.Granularity, basis string, from, to time.Time) (rows []fetch.MeterData, runs []string) {
	t.Helper()
	col := "date"
	if basis == string(fetch.BasisReported) {
		col = "date_processed"
	}
	rs, err := db.Query(`SELECT date, date_processed, meter_name, meter_sku, family, solution, unit,
       quantity, price, CAST(cost AS VARCHAR), currency, entitlement, entitlement_type,
       payment_method, payment_method_name, project, CAST(run_id AS VARCHAR)
FROM usage WHERE granularity = ? AND basis = ? AND `+col+` >= ? AND `+col+` < ?`, string(g), basis, from, to)
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	for rs.Next() {
		var (
			md                                                    fetch.MeterData
			processed                                             sql.NullTime
			sku, family, solution, unit, ent, entType, pm, pmName sql.NullString
			project                                               sql.NullString
			price                                                 sql.NullFloat64
			cost, run                                             string
		)
		if err := rs.Scan(&md.Date, &processed, &md.MeterName, &sku, &family, &solution, &unit,
			&md.Quantity, &price, &cost, &md.Currency, &ent, &entType, &pm, &pmName, &project, &run); err != nil {
			t.Fatal(err)
		}
		md.Date = md.Date.UTC()
		if processed.Valid {
			p := processed.Time.UTC()
			md.DateProcessed = &p
		}
		if price.Valid {
			md.Price = &price.Float64
		}
		md.MeterSku, md.Family, md.Solution, md.Unit = sku.String, family.String, solution.String, unit.String
		md.Entitlement, md.EntitlementType, md.PaymentMethod, md.PaymentMethodName = ent.String, entType.String, pm.String, pmName.String
		md.Project = project.String
		if md.Cost, err = fetch.ParseDecimal(cost); err != nil {
			t.Fatal(err)
		}
		rows = append(rows, md)
		runs = append(runs, run)
	}
	if err := rs.Err(); err != nil {
		t.Fatal(err)
	}
	return rows, runs
}

// render is a row as one line, every field exact: floats by their shortest
// round-trip text, costs as exact fractions.
func render(md fetch.MeterData) string {
	f := func(p *float64) string {
		if p == nil {
			return "null"
		}
		return strconv.FormatFloat(*p, 'g', -1, 64)
	}
	processed := "null"
	if md.DateProcessed != nil {
		processed = md.DateProcessed.UTC().Format(time.RFC3339)
	}
	return strings.Join([]string{
		md.Date.UTC().Format(time.RFC3339), processed, md.MeterName, md.MeterSku, md.Family, md.Solution,
		md.Unit, f(&md.Quantity), f(md.Price), md.Cost.Rat().RatString(), md.Currency, md.Entitlement,
		md.EntitlementType, md.PaymentMethod, md.PaymentMethodName, md.Project,
	}, "|")
}

func renderAll(rows []fetch.MeterData) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = render(r)
	}
	slices.Sort(out)
	return out
}

// totals sums costs per currency exactly, in DuckDB.
func totals(t testing.TB, db *sql.DB, g fetch.Granularity, basis string, from, to time.Time) (map[string]fetch.Decimal, int) {
	t.Helper()
	col := "date"
	if basis == string(fetch.BasisReported) {
		col = "date_processed"
	}
	rows, err := db.Query(`SELECT currency, CAST(sum(cost) AS VARCHAR), count(*) FROM usage
WHERE granularity = ? AND basis = ? AND `+col+` >= ? AND `+col+` < ? GROUP BY currency`, string(g), basis, from, to)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]fetch.Decimal{}
	n := 0
	for rows.Next() {
		var cur, sum string
		var c int
		if err := rows.Scan(&cur, &sum, &c); err != nil {
			t.Fatal(err)
		}
		d, err := fetch.ParseDecimal(sum)
		if err != nil {
			t.Fatal(err)
		}
		out[cur] = d
		n += c
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out, n
}

// sameTotals reports how two per-currency totals differ, exactly; "" when
// they are equal.
func sameTotals(got, want map[string]fetch.Decimal) string {
	var diffs []string
	for cur, w := range want {
		g, ok := got[cur]
		if !ok || g.Cmp(w) != 0 {
			diffs = append(diffs, fmt.Sprintf("%s: got %s, want %s", cur, g, w))
		}
	}
	for cur, g := range got {
		if _, ok := want[cur]; !ok {
			diffs = append(diffs, fmt.Sprintf("%s: got %s, want none", cur, g))
		}
	}
	slices.Sort(diffs)
	return strings.Join(diffs, "; ")
}

// wantExact checks that the database at path holds exactly the sim's truth
// for q at the sim's clock: totals per currency compared as decimals, the
// row count, and every row field by field.
func (h *harness) wantExact(path, label string, q fetch.UsageQuery) {
	h.t.Helper()
	truth := h.sim.Truth(q)
	if truth.Rows == 0 || len(truth.Cost) == 0 {
		h.t.Fatalf("%s: the truth of %s is empty; the test covers nothing", label, q.Window)
	}
	want := renderAll(h.sim.Rows(q))
	withDB(h.t, path, func(db *sql.DB) {
		got, n := totals(h.t, db, q.Window.Granularity, string(q.Basis()), q.Window.Start, q.Window.End)
		if d := sameTotals(got, truth.Cost); d != "" {
			h.t.Errorf("%s: totals per currency differ from the truth: %s", label, d)
		}
		if n != truth.Rows {
			h.t.Errorf("%s: %d rows, truth %d", label, n, truth.Rows)
		}
		rows := renderAll(stored(h.t, db, q.Window.Granularity, string(q.Basis()), q.Window.Start, q.Window.End))
		if d := firstDiff(rows, want); d != "" {
			h.t.Errorf("%s: rows differ from the truth: %s", label, d)
		}
	})
}

// firstDiff describes the first difference of two sorted line lists.
func firstDiff(got, want []string) string {
	for i := 0; i < max(len(got), len(want)); i++ {
		var g, w string
		if i < len(got) {
			g = got[i]
		}
		if i < len(want) {
			w = want[i]
		}
		if g != w {
			return fmt.Sprintf("%d lines vs %d; first difference at line %d:\n  got  %s\n  want %s", len(got), len(want), i, g, w)
		}
	}
	return ""
}

// dump is the whole usage table, every column but run_id and fetched_at,
// in a fixed order.
func dump(t testing.TB, path string) []string {
	t.Helper()
	var out []string
	withDB(t, path, func(db *sql.DB) {
		rows, err := db.Query(`SELECT COLUMNS(* EXCLUDE (run_id, fetched_at))::VARCHAR FROM usage ORDER BY ALL`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		cols, err := rows.Columns()
		if err != nil {
			t.Fatal(err)
		}
		vals := make([]sql.NullString, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		for rows.Next() {
			if err := rows.Scan(ptrs...); err != nil {
				t.Fatal(err)
			}
			parts := make([]string, len(vals))
			for i, v := range vals {
				parts[i] = "null"
				if v.Valid {
					parts[i] = strconv.Quote(v.String)
				}
			}
			out = append(out, strings.Join(parts, "|"))
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		if len(cols) != 18 {
			t.Fatalf("usage has %d columns besides run_id and fetched_at, want 18: %q", len(cols), cols)
		}
	})
	return out
}

// ledgerOverlaps lists loaded windows of the same granularity, basis and
// scope that overlap: a window loaded twice.
func ledgerOverlaps(t testing.TB, path string) []string {
	t.Helper()
	var out []string
	withDB(t, path, func(db *sql.DB) {
		out = queryStrings(t, db, `SELECT a.granularity || ' ' || a.start || '..' || a."end" || ' overlaps ' || b.start || '..' || b."end"
FROM fetch_windows a JOIN fetch_windows b
  ON a.granularity = b.granularity AND a.basis = b.basis AND a.scope = b.scope
 AND a.start < b."end" AND b.start < a."end" AND (a.start, a."end") < (b.start, b."end")`)
	})
	return out
}

// queryStrings runs a query of one text column and returns its rows.
func queryStrings(t testing.TB, db *sql.DB, query string, args ...any) []string {
	t.Helper()
	rows, err := db.Query(query, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// checkNoToken fails the test when the token appears in the logs or in any
// file under the test's folder (database files, published copies, the
// unzipped parts of workbooks); the config there names no token at all.
func (h *harness) checkNoToken() {
	h.t.Helper()
	if bytes.Contains(h.logs.Bytes(), []byte(testToken)) {
		h.t.Errorf("the token appears in the logs")
	}
	if !bytes.Contains(h.logs.Bytes(), []byte(`"level":"debug"`)) {
		h.t.Errorf("no debug line was logged; the token check saw less than it should")
	}
	noTokenInFiles(h.t, h.dir, testToken)
}

func noTokenInFiles(t testing.TB, dir, token string) {
	t.Helper()
	err := filepath.Walk(dir, func(path string, fi os.FileInfo, err error) error {
		if err != nil || fi.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if bytes.Contains(b, []byte(token)) {
			t.Errorf("the token appears in %s", path)
		}
		if strings.HasSuffix(path, ".xlsx") {
			zr, err := zip.NewReader(bytes.NewReader(b), int64(len(b)))
			if err != nil {
				return fmt.Errorf("open workbook %s: %w", path, err)
			}
			for _, f := range zr.File {
				rc, err := f.Open()
				if err != nil {
					return err
				}
				part, err := io.ReadAll(rc)
				rc.Close()
				if err != nil {
					return err
				}
				if bytes.Contains(part, []byte(token)) {
					t.Errorf("the token appears in %s, part %s", path, f.Name)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
