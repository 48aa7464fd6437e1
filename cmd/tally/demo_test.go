package main

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode"

	"github.com/rs/zerolog"
	"github.com/xuri/excelize/v2"

	"github.com/tally-dev/tally"
	"github.com/tally-dev/tally/export"
	"github.com/tally-dev/tally/fetch/sim"
	"github.com/tally-dev/tally/internal/testkit/focuscheck"
	"github.com/tally-dev/tally/internal/testkit/printcheck"
	"github.com/tally-dev/tally/internal/testkit/prooftest"
	"github.com/tally-dev/tally/job"
	"github.com/tally-dev/tally/reports"
	"github.com/tally-dev/tally/store"
)

// TestDemoPrintsWorkingQueries: `tally demo --dir DIR` (sharedDemo) through the
// cobra root into a folder whose name has a space and a quote: it writes a database, the
// analysts' copy and a workbook, prints where, and prints three queries that
// each run as printed.
func TestDemoPrintsWorkingQueries(t *testing.T) {
	demo := sharedDemo(t)
	dir, out, code, stderr := demo.dir, demo.out, demo.code, demo.stderr
	if code != job.ExitOK {
		t.Fatalf("demo: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, stderr)
	}
	for label, name := range map[string]string{
		"workbook:": "", "database:": "tally.duckdb", "analysts' copy:": "tally.published.duckdb",
	} {
		path := ""
		for _, l := range strings.Split(out, "\n") {
			if v, ok := strings.CutPrefix(strings.TrimSpace(l), label); ok {
				path = strings.TrimSpace(v)
			}
		}
		if path == "" || !strings.HasPrefix(path, dir+string(filepath.Separator)) || (name != "" && filepath.Base(path) != name) {
			t.Errorf("demo prints %s %q, want a file %s in %s", label, path, name, dir)
			continue
		}
		if fi, err := os.Stat(path); err != nil || fi.Size() == 0 {
			t.Errorf("%s %s: %v", label, path, err)
		}
		if label == "workbook:" && filepath.Ext(path) != ".xlsx" {
			t.Errorf("workbook %s is not an .xlsx", path)
		}
	}

	var queries [][]string
	for _, l := range strings.Split(out, "\n") {
		if cmd, ok := strings.CutPrefix(strings.TrimSpace(l), "go run ./cmd/tally "); ok {
			args, err := shellWords(cmd)
			if err != nil {
				t.Fatalf("printed command %q: %v", cmd, err)
			}
			queries = append(queries, args)
		}
	}
	if len(queries) != 3 {
		t.Fatalf("demo printed %d commands, want three queries:\n%s", len(queries), out)
	}
	for _, args := range queries {
		if args[0] != "query" {
			t.Errorf("printed command %q is not a query", args)
			continue
		}
		// The usage table holds every granularity and basis loaded: a sum
		// straight over it counts a charge more than once.
		if sql := strings.Join(args, " "); rawUsageSum.MatchString(sql) {
			t.Errorf("suggested query %q sums the usage table itself; read usage_finest or a view", sql)
		}
		got, code, stderr := cli(t, args...)
		lines := strings.Split(strings.TrimSpace(got), "\n")
		if code != job.ExitOK || len(lines) < 3 {
			t.Errorf("%q: exit %d, %d lines\nstdout:\n%s\nstderr:\n%s", args, code, len(lines), got, stderr)
		}
	}
}

// demoRun is one `tally demo --dir DIR` and what it printed.
type demoRun struct {
	dir, out, stderr string
	code             int
}

// sharedDemo is the run of `tally demo` through the cobra root into a
// folder whose name has a space and a quote, made once per test binary: a
// demo fetches, reports and closes an hourly month, and the tests that
// read its output (TestDemoPrintsWorkingQueries) and print its workbook
// (TestWorkbookPrintsAsPDF) read the same run. Neither writes into its
// folder.
func sharedDemo(t *testing.T) demoRun {
	t.Helper()
	d, err := demoOnce()
	if err != nil {
		t.Fatal(err)
	}
	return d
}

var demoOnce = sync.OnceValues(func() (demoRun, error) {
	parent, err := sharedDir("tally-cli-demo-")
	if err != nil {
		return demoRun{}, err
	}
	d := demoRun{dir: filepath.Join(parent, "analyst's demo")}
	d.stderr, err = captureStderr(func() {
		var err error
		d.out, err = runCLI("", "demo", "--dir", d.dir, "--log-format", "json", "--log-level", "warn")
		d.code = exitCode(err)
	})
	return d, err
})

var rawUsageSum = regexp.MustCompile(`(?i)sum\(.*\bFROM\s+usage(\s|$)`)

// shellWords splits a command line the way a POSIX shell would for words,
// single quotes, double quotes and backslashes (no expansions).
func shellWords(s string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return nil, errUnclosed
			}
			cur.WriteString(s[i+1 : i+1+j])
			i += j + 1
			inWord = true
		case c == '"':
			i++
			for ; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' && i+1 < len(s) && strings.IndexByte("\"\\$`", s[i+1]) >= 0 {
					i++
				}
				cur.WriteByte(s[i])
			}
			if i >= len(s) {
				return nil, errUnclosed
			}
			inWord = true
		case c == '\\' && i+1 < len(s):
			i++
			cur.WriteByte(s[i])
			inWord = true
		case unicode.IsSpace(rune(c)):
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, nil
}

var errUnclosed = errors.New("unclosed quote")

// TestDemo runs the demo at a fixed clock into a folder holding a previous
// demo's database: it starts afresh, its database and the analysts' copy
// equal the truth of a sim built like the demo's, and it writes the last full month's workbook; the random token
// stays in the token file alone.
func TestDemo(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "demo")
	now := time.Date(2025, 3, 6, 10, 30, 0, 0, time.UTC)
	var logs bytes.Buffer
	log := zerolog.New(zerolog.SyncWriter(&logs)).Level(zerolog.DebugLevel)

	// A previous demo's database, with a run and a window of its own.
	if err := os.MkdirAll(dir, 0o750); err != nil {
		t.Fatal(err)
	}
	old, err := store.Open(context.Background(), filepath.Join(dir, "tally.duckdb"))
	if err != nil {
		t.Fatal(err)
	}
	oldRun := store.NewRunID()
	if err := old.BeginRun(context.Background(), oldRun, "run", ""); err != nil {
		t.Fatal(err)
	}
	stale := tally.UsageQuery{Window: tally.Window{Start: prooftest.Day(t, "2025-02-03"), End: prooftest.Day(t, "2025-02-04"), Granularity: tally.Hour}}
	if _, err := old.LoadWindow(context.Background(), stale, oldRun, func(yield func(tally.MeterData, error) bool) {
		yield(tally.MeterData{Date: prooftest.Day(t, "2025-02-03"), MeterName: "stale", Cost: tally.MustDecimal("1"), Currency: "USD"}, nil)
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := old.Publish(context.Background()); err != nil {
		t.Fatal(err)
	}
	old.Close()

	res, err := runDemo(context.Background(), dir, log, "test", now, tally.SourceOrganization)
	if err != nil {
		t.Fatalf("demo: %v", err)
	}
	want := demoResult{
		Dir: dir, Config: filepath.Join(dir, "tally.yaml"), Database: filepath.Join(dir, "tally.duckdb"),
		Published: filepath.Join(dir, "tally.published.duckdb"),
		Workbook:  filepath.Join(dir, "reports", "2025-02", "tally-cost-2025-02.xlsx"),
	}
	if res.Dir != want.Dir || res.Config != want.Config || res.Database != want.Database ||
		res.Published != want.Published || res.Workbook != want.Workbook {
		t.Errorf("demo result %+v\nwant paths %+v", res, want)
	}
	for _, p := range []string{res.Config, res.Database, res.Published, res.Workbook} {
		if _, err := os.Stat(p); err != nil {
			t.Error(err)
		}
	}

	// The demo's interface: seed 1, usage from the first of the previous
	// month, the demo's clock; and an hour and a half later, when the
	// demo fetched again the day the provider had corrected by then.
	rev := demoRevision(now)
	later := rev.From.Add(30 * time.Minute)
	opts := sim.Options{Seed: 1, Start: prooftest.Day(t, "2025-02-01"), Now: func() time.Time { return now }, Spike: demoSpike(now), Revisions: []sim.Spike{rev}}
	s := sim.New(opts)
	opts.Now = func() time.Time { return later }
	revised := sim.New(opts)
	if rev.Day != prooftest.Day(t, "2025-02-10") {
		t.Fatalf("the demo revises %s", rev.Day)
	}
	for _, span := range []struct {
		from, to string
		sim      *sim.Server
	}{{"2025-02-01", "2025-02-10", s}, {"2025-02-10", "2025-02-11", revised}, {"2025-02-11", "2025-03-07", s}} {
		q := tally.UsageQuery{Window: tally.Window{Start: prooftest.Day(t, span.from), End: prooftest.Day(t, span.to), Granularity: tally.Hour}}
		truth := span.sim.Truth(q)
		wantRows := prooftest.RenderAll(span.sim.Rows(q))
		for _, path := range []string{res.Database, res.Published} {
			prooftest.WithDB(t, path, func(db *sql.DB) {
				got, n := prooftest.Totals(t, db, tally.Hour, "usage", q.Window.Start, q.Window.End)
				if d := prooftest.SameTotals(got, truth.Cost); d != "" || n != truth.Rows {
					t.Errorf("%s %s..%s: %d rows (truth %d), totals differ: %s", path, span.from, span.to, n, truth.Rows, d)
				}
				if d := prooftest.FirstDiff(prooftest.RenderAll(prooftest.Stored(t, db, tally.Hour, "usage", q.Window.Start, q.Window.End)), wantRows); d != "" {
					t.Errorf("%s %s..%s: rows differ from the truth: %s", path, span.from, span.to, d)
				}
			})
		}
	}
	var refetchRun string
	for _, path := range []string{res.Database, res.Published} {
		prooftest.WithDB(t, path, func(db *sql.DB) {
			var runs string
			if err := db.QueryRow(`SELECT string_agg(command, ',' ORDER BY started) FROM runs`).Scan(&runs); err != nil {
				t.Fatal(err)
			}
			if runs != "run,close,refetch" {
				t.Errorf("%s: runs %q, want run,close,refetch: the demo starts from a fresh database", path, runs)
			}
			if err := db.QueryRow(`SELECT CAST(id AS VARCHAR) FROM runs WHERE command = 'refetch'`).Scan(&refetchRun); err != nil {
				t.Fatal(err)
			}
		})
	}

	// The closed month's final workbook stays as closed; the month's
	// workbook, written after the correction, shows it as an adjustment.
	if fig, err := reports.ReadSummary(res.Final); err != nil || !strings.Contains(fig.Status, "by tally demo") {
		t.Errorf("final workbook %s: status %q (%v)", res.Final, fig.Status, err)
	}
	if fig, err := reports.ReadSummary(res.Workbook); err != nil || !strings.Contains(fig.Status, "the final workbook is tally-cost-2025-02-final.xlsx") {
		t.Errorf("workbook %s: status %q (%v)", res.Workbook, fig.Status, err)
	}
	f, err := excelize.OpenFile(res.Workbook)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	summary, err := f.GetRows("Summary", excelize.Options{RawCellValue: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := prooftest.Labelled(summary, "Last run id"); got != refetchRun {
		t.Errorf("workbook's last run id %q, want the refetch's %s", got, refetchRun)
	}
	// Two cost centres and the shared platform project split proportionally:
	// the workbook has a Chargeback sheet that ties out, and each cost
	// centre a statement.
	charge, err := f.GetRows("Chargeback", excelize.Options{RawCellValue: true})
	if err != nil {
		t.Fatal(err)
	}
	var centres []string
	for _, r := range charge[1:] {
		if len(r) == 0 || r[0] == "" {
			break
		}
		centres = append(centres, r[0]+" "+r[1])
		if len(r) > 6 && r[0] != tally.Unallocated && !strings.Contains(r[6], "platform@2025-02 (proportional)") {
			t.Errorf("%s received the platform by %q", r[0], r[6])
		}
	}
	if len(centres) < 2 || !slices.Contains(centres, "News USD") || !slices.Contains(centres, "Sport USD") {
		t.Errorf("Chargeback rows %v", centres)
	}
	for _, r := range charge {
		if len(r) > 4 && r[0] == "Difference" && r[4] != "0" {
			t.Errorf("Chargeback tie-out %v", r)
		}
	}
	if len(res.Statements) != 2 || res.Statements[0].CostCentre != "News" || res.Statements[1].CostCentre != "Sport" {
		t.Errorf("statements %+v", res.Statements)
	}
	for _, st := range res.Statements {
		if _, err := os.Stat(st.Path); err != nil {
			t.Error(err)
		}
	}
	demoFOCUS(t, dir)
	adj, err := f.GetRows("Adjustments to closed months")
	if err != nil || len(adj) < 2 || !strings.Contains(strings.Join(adj[1], " "), "newsroom") || !strings.Contains(strings.Join(adj[1], " "), "streaming_egress_gb") {
		t.Errorf("the workbook has no adjustment for the corrected meter: %v %v", adj, err)
	}

	tok, err := os.ReadFile(filepath.Join(dir, "token"))
	if err != nil {
		t.Fatal(err)
	}
	token := strings.TrimSpace(string(tok))
	if len(token) < 20 {
		t.Fatalf("demo token %d characters long", len(token))
	}
	if bytes.Contains(logs.Bytes(), []byte(token)) {
		t.Error("the demo token appears in the logs")
	}
	os.Remove(filepath.Join(dir, "token"))
	prooftest.NoTokenInFiles(t, dir, token)
	// The demo's budgets are checked and its spike yesterday is the
	// anomaly alert.
	var anomalies []string
	for _, a := range res.Nightly.Fetch.Alerts.New {
		if a.Kind == "anomaly" {
			anomalies = append(anomalies, a.Key)
		}
	}
	if len(res.Nightly.Fetch.Alerts.Budgets) != 2 || strings.Join(anomalies, ",") != "anomaly:newsroom:streaming_egress_gb:USD:2025-03-05" {
		t.Errorf("demo alerts: %d budgets checked, anomalies %v", len(res.Nightly.Fetch.Alerts.Budgets), anomalies)
	}
	if store.PublishedPath(res.Database) != res.Published {
		t.Errorf("published copy at %s, want %s", res.Published, store.PublishedPath(res.Database))
	}
}

// tally demo --source projects reads the per-project reports night after
// night and writes an estimated workbook that says so; its first printed
// query sums the estimate. Its day is the 3rd of a month: it reads 16
// nights, where on a month's last day it reads 30, each a whole fetch.
func TestDemoProjectsSource(t *testing.T) {
	setPlanClock(t, time.Date(2026, 3, 3, 10, 30, 0, 0, time.UTC))
	dir := filepath.Join(t.TempDir(), "demo")
	out, code, stderr := cli(t, "demo", "--dir", dir, "--source", "projects", "--log-format", "json", "--log-level", "warn")
	if code != job.ExitOK {
		t.Fatalf("demo: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, stderr)
	}
	if !strings.Contains(out, "project reports (estimated from the rate card: not an invoice)") || !strings.Contains(out, "basis = 'estimated'") {
		t.Fatalf("demo output:\n%s", out)
	}
	var book string
	for _, l := range strings.Split(out, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), "workbook:"); ok {
			book = strings.TrimSpace(v)
		}
	}
	f, err := excelize.OpenFile(book)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	title, _ := f.GetCellValue("Summary", "A1")
	if !strings.Contains(title, "estimated from the rate card: not an invoice") {
		t.Errorf("workbook title %q", title)
	}
	rows, _ := f.GetRows("Detail")
	if len(rows) < 50 {
		t.Errorf("the estimated workbook's Detail has %d rows", len(rows))
	}
	// The demo's EUR usage is on meters no rate card price matches: its
	// Summary row says not priced, not 0 billed with a blank total.
	summary, _ := f.GetRows("Summary")
	var header []string
	notPriced := 0
	for _, r := range summary {
		if len(r) > 0 && r[0] == "Currency" && slices.Contains(r, "Total usage value") {
			header = r
			continue
		}
		if header == nil || len(r) == 0 || r[0] == "" {
			if header != nil {
				break
			}
			continue
		}
		total := slices.Index(header, "Total usage value")
		switch {
		case len(r) <= total || r[total] == "":
			t.Errorf("Summary row %q has a blank total", r)
		case r[total] == reports.NotPriced:
			notPriced++
			if r[slices.Index(header, "Billed directly")] != reports.NotPriced {
				t.Errorf("Summary row %q: an unpriced currency shows an amount billed", r)
			}
		}
	}
	if notPriced == 0 {
		t.Errorf("no Summary row of the estimate says %q: %q", reports.NotPriced, summary)
	}
	// The estimate prints legibly too: its Summary's long basis line, its
	// Notes' estimate paragraph, its not priced cells.
	tools, err := printcheck.Find()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	pdf, err := tools.ToPDF(ctx, book, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	pages, err := tools.Pages(ctx, pdf)
	if err != nil {
		t.Fatal(err)
	}
	printcheck.Legible(t, book, pages)
	if out, code, _ := cli(t, "demo", "--dir", dir, "--source", "project"); code != job.ExitRefused {
		t.Errorf("--source project: exit %d, want 2\n%s", code, out)
	}
}

// demoFOCUS exports the demo's closed month, with its late charge, as
// FOCUS 1.2 and 1.3 through tally export: each conforms (one SkuId per
// SkuPriceId), every row of a payment method names its billing account,
// and the rows of the month as closed and its Correction are there.
func demoFOCUS(t *testing.T, dir string) {
	t.Helper()
	pub, err := store.Open(context.Background(), filepath.Join(dir, "tally.published.duckdb"), store.ReadOnly())
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Close()
	for _, version := range []string{export.FOCUS12, export.FOCUS13} {
		lake := filepath.Join(dir, "focus-"+version)
		if out, err := execCLI(t, "", "export", "--config", filepath.Join(dir, "tally.yaml"), "--format", "focus", "--focus-version", version, "--to", lake); err != nil {
			t.Fatalf("export FOCUS %s: %v\n%s", version, err, out)
		}
		v, c, err := focuscheck.Export(context.Background(), pub.DB(), lake, version)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range v {
			t.Errorf("the demo's FOCUS %s export: %s", version, l)
		}
		if frozen, corrections, unnamed := c.Frozen, c.LateCharges, c.Unnamed; frozen == 0 || corrections == 0 || unnamed > 0 {
			t.Errorf("the demo's FOCUS %s export: %d rows as closed, %d Correction rows of late charges, %d rows of a payment method without BillingAccountName", version, frozen, corrections, unnamed)
		}
	}
}
