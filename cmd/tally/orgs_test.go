package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/xuri/excelize/v2"

	"github.com/tally-dev/tally"
	"github.com/tally-dev/tally/fetch/sim"
	"github.com/tally-dev/tally/internal/testkit/focuscheck"
	"github.com/tally-dev/tally/internal/testkit/printcheck"
	"github.com/tally-dev/tally/internal/testkit/prooftest"
	"github.com/tally-dev/tally/job"
	"github.com/tally-dev/tally/reports"
	"github.com/tally-dev/tally/store"
)

// Two organizations behind one address, each with its own token, the same
// project names and its own currency: each loads exactly its own truth,
// apart from the other; the group workbook's By organization sheet shows
// what each organization's own workbook shows; and one organization's
// expired token fails it alone, sending nothing with it, while the other
// still loads and the run is partial, naming it.
func TestOrganizationsLoadApartAndFailAlone(t *testing.T) {
	g := newOrgGroup(t)
	emea, us, month := g.emea, g.us, g.month
	g.extra = "budgets:\n  - name: emea-cap\n    scope: organization:emea\n    currency: EUR\n    amount: 1\n    actual: [100]\n    forecast: []\n"
	cfg := g.config(t, t.TempDir(), "emea", "us")
	dir := filepath.Dir(cfg)
	if _, code, stderr := cli(t, "fetch", "--config", cfg, "--log-format", "json"); code != job.ExitOK {
		t.Fatalf("fetch: exit %d\n%s", code, stderr)
	}
	plan, code, stderr := cli(t, "plan", "--config", cfg, "--format", "json")
	if code != job.ExitOK || !strings.Contains(plan, `"organization":"emea"`) || !strings.Contains(plan, `"organization":"us"`) {
		t.Errorf("plan after the fetch: exit %d, want each organization's lookback windows:\n%s\n%s", code, plan, stderr)
	}
	status, code, stderr := cli(t, "status", "--config", cfg)
	if code != job.ExitOK || !strings.Contains(status, "ORGANIZATION") || !strings.Contains(status, "\nemea ") || !strings.Contains(status, "\nus ") {
		t.Errorf("status: exit %d, want each organization's loaded windows:\n%s\n%s", code, status, stderr)
	}
	db := filepath.Join(dir, "tally.duckdb")
	window := tally.UsageQuery{Window: tally.Window{Start: month, End: month.AddDate(0, 1, 0), Granularity: tally.Day}}
	got := loadedByOrg(t, db, month)
	for _, o := range []struct {
		name string
		s    *sim.Server
	}{{"emea", emea}, {"us", us}} {
		truth := o.s.Truth(window)
		var want []string
		for cur, cost := range truth.Cost {
			want = append(want, fmt.Sprintf("%s|%s|%s", o.name, o.s.OrgID(), cur)+"|"+cost.Rat().RatString())
		}
		slices.Sort(want)
		if !slices.Equal(got[o.name], want) {
			t.Errorf("organization %s loaded\n  %v\nwant its own truth\n  %v", o.name, got[o.name], want)
		}
	}
	// The budget of scope organization:emea counts emea's cost alone (in
	// EUR, which us never bills), and its alert says whose it is.
	if got := scalarText(t, db, `SELECT string_agg(DISTINCT organization, ',') FROM alerts WHERE kind = 'budget'`); got != "emea" {
		t.Errorf("budget alerts of organizations %q, want emea's", got)
	}
	if both := scalarText(t, db, `SELECT count(DISTINCT organization) FROM usage WHERE project = 'newsroom'`); both != "2" {
		t.Errorf("project newsroom is in %s organizations, want 2 (each organization's own)", both)
	}

	// Each organization's workbook, and the group's.
	m := month.Format("2006-01")
	for _, args := range [][]string{{"--org", "emea"}, {"--org", "us"}, nil} {
		if _, code, stderr := cli(t, append([]string{"report", "--config", cfg, "--month", m}, args...)...); code != job.ExitOK {
			t.Fatalf("report %v: exit %d\n%s", args, code, stderr)
		}
	}
	byOrgAgrees(t, reports.DefaultPath(filepath.Join(dir, "reports"), month), func(org string) string {
		return reports.OrgPath(filepath.Join(dir, "reports"), month, org)
	}, "emea", "us")
	// The group workbook prints as finance prints it: By organization on a
	// page of its own, naming each organization, legible.
	tools, err := printcheck.Find()
	if err != nil {
		t.Fatal(err)
	}
	groupBook := reports.DefaultPath(filepath.Join(dir, "reports"), month)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	pdf, err := tools.ToPDF(ctx, groupBook, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	pages, err := tools.Pages(ctx, pdf)
	if err != nil {
		t.Fatal(err)
	}
	printcheck.Legible(t, groupBook, pages)
	byOrgPages := printcheck.BySheet(pages)["By organization"]
	if len(byOrgPages) != 1 || !strings.Contains(byOrgPages[0].Text(), "emea") || !strings.Contains(byOrgPages[0].Text(), "us") {
		t.Errorf("By organization prints on %d pages, want one naming emea and us", len(byOrgPages))
	}
	if _, code, _ := cli(t, "report", "--config", cfg, "--month", m, "--org", "apac"); code != job.ExitRefused {
		t.Errorf("report --org apac (not configured): exit %d, want %d", code, job.ExitRefused)
	}

	// FOCUS 1.3: each organization is its own billing account, the export
	// passes the conformance check, and projects are sub-accounts within.
	lake := filepath.Join(dir, "focus")
	if _, code, stderr := cli(t, "export", "--config", cfg, "--format", "focus", "--to", lake); code != job.ExitOK {
		t.Fatalf("export --format focus: exit %d\n%s", code, stderr)
	}
	func() {
		st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "reader.duckdb"))
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		if v, err := focuscheck.ExportViolations(context.Background(), st.DB(), lake); err != nil || len(v) > 0 {
			t.Errorf("FOCUS 1.3 export of two organizations: %q, %v", v, err)
		}
		var accounts string
		if err := st.DB().QueryRow(`SELECT string_agg(DISTINCT x_Organization || '=' || BillingAccountId || '/' || BillingAccountName, ',' ORDER BY x_Organization || '=' || BillingAccountId || '/' || BillingAccountName)
FROM read_parquet('` + filepath.ToSlash(lake) + `/focus/*/*.parquet', hive_partitioning = true)`).Scan(&accounts); err != nil {
			t.Fatal(err)
		}
		if want := "emea=" + emea.OrgID() + "/EMEA Media,us=" + us.OrgID() + "/US Media"; accounts != want {
			t.Errorf("FOCUS billing accounts %s, want %s", accounts, want)
		}
	}()

	// The nightly books: the group's workbook and each organization's own
	// are written and delivered, each organization's to a folder of its
	// name.
	if _, code, stderr := cli(t, "run", "--config", cfg); code != job.ExitOK {
		t.Fatalf("run [report, deliver]: exit %d\n%s", code, stderr)
	}
	for _, org := range []string{"", "emea", "us"} {
		book := reports.DefaultPath(filepath.Join(dir, "reports"), month)
		if org != "" {
			book = reports.OrgPath(filepath.Join(dir, "reports"), month, org)
		}
		want, err := os.ReadFile(book)
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join(dir, "deliver", org, filepath.Base(book)))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("delivered workbook of organization %q: %v; want %s as written", org, err, book)
		}
	}

	// The us token expires: us fails alone.
	t.Setenv("TALLY_TEST_TOKEN_US", jwtToken(time.Now().Add(-time.Hour), "us@example.com"))
	sentUS := us.Requests()
	_, code, stderr = cli(t, "fetch", "--config", cfg, "--log-format", "json")
	if code != job.ExitPartial || !strings.Contains(stderr, "organization us not fetched") || !strings.Contains(stderr, "organization us's API token expired") {
		t.Fatalf("fetch with us's token expired: exit %d, want %d naming us\n%s", code, job.ExitPartial, stderr)
	}
	if us.Requests() != sentUS {
		t.Errorf("%d requests went to us with its expired token", us.Requests()-sentUS)
	}
	if n := scalarText(t, db, `SELECT count(*) FROM runs WHERE status = 'partial'`); n != "1" {
		t.Errorf("%s partial runs, want 1", n)
	}
	if n := scalarText(t, db, `SELECT count(*) FROM fetch_windows w JOIN runs r ON r.id = w.run_id WHERE r.status = 'partial' AND w.organization = 'emea'`); n == "0" {
		t.Error("the partial run loaded no window of emea")
	}
}

// byOrgAgrees checks a group workbook's By organization sheet against each
// organization's own workbook (book(org)): every row of its Summary, the
// same total.
func byOrgAgrees(t *testing.T, groupBook string, book func(org string) string, orgs ...string) {
	t.Helper()
	byOrg := sheetRows(t, groupBook, "By organization")
	for _, org := range orgs {
		own, err := reports.ReadSummary(book(org))
		if err != nil {
			t.Fatal(err)
		}
		total := slices.Index(own.Header, "Total usage value")
		if total < 0 {
			t.Fatalf("the Summary of %s has no Total usage value column: %v", org, own.Header)
		}
		for _, r := range own.Rows {
			found := false
			for _, g := range byOrg {
				if len(g) >= 8 && g[0] == org && g[1] == r[0] {
					found = true
					if g[7] != r[total] {
						t.Errorf("By organization shows %s %s %s; its own workbook %s", org, r[0], g[7], r[total])
					}
				}
			}
			if !found {
				t.Errorf("By organization has no row for %s %s; rows %v", org, r[0], byOrg)
			}
		}
	}
}

// loadedByOrg is the month's usage value per organization, its id and
// currency, as the views count it (usage_finest).
func loadedByOrg(t *testing.T, db string, month time.Time) map[string][]string {
	t.Helper()
	st, err := store.Open(context.Background(), db, store.ReadOnly())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	rows, err := st.DB().Query(`SELECT organization, organization_id, currency, CAST(sum(cost) AS VARCHAR)
FROM usage_finest WHERE period_at >= ? AND period_at < ? GROUP BY ALL ORDER BY ALL`, month, month.AddDate(0, 1, 0))
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string][]string{}
	for rows.Next() {
		var org, id, cur, cost string
		if err := rows.Scan(&org, &id, &cur, &cost); err != nil {
			t.Fatal(err)
		}
		d, err := tally.ParseDecimal(cost)
		if err != nil {
			t.Fatal(err)
		}
		out[org] = append(out[org], org+"|"+id+"|"+cur+"|"+d.Rat().RatString())
	}
	return out
}

func scalarText(t *testing.T, db, q string) string {
	t.Helper()
	st, err := store.Open(context.Background(), db, store.ReadOnly())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var s string
	if err := st.DB().QueryRow("SELECT CAST((" + q + ") AS VARCHAR)").Scan(&s); err != nil {
		t.Fatal(err)
	}
	return s
}

func sheetRows(t *testing.T, path, sheet string) [][]string {
	t.Helper()
	f, err := excelize.OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := f.GetRows(sheet)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return rows
}

// orgGroup is two simulated organizations behind one address: emea, billed
// in EUR, and us, billed in USD, with the same project names, from three
// days before last month.
type orgGroup struct {
	emea, us *sim.Server
	url      string
	extra    string    // appended to every config written
	month    time.Time // last month
	start    time.Time
}

func newOrgGroup(t *testing.T) *orgGroup {
	t.Helper()
	return newOrgGroupTokens(t, "tok-emea-7c1d9e04b2a36f58", "tok-us-5a8f2c6e9d0b1734")
}

// newOrgGroupTokens is newOrgGroup with the organizations' tokens given
// (JWTs, to tell of their expiry).
func newOrgGroupTokens(t *testing.T, emeaToken, usToken string) *orgGroup {
	t.Helper()
	g, srv, err := makeOrgGroup(emeaToken, usToken)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	g.setEnv(t)
	return g
}

func makeOrgGroup(emeaToken, usToken string) (*orgGroup, *httptest.Server, error) {
	now := time.Now().UTC().Truncate(time.Hour)
	clock := func() time.Time { return now }
	g := &orgGroup{month: tally.Month.Truncate(now).AddDate(0, -1, 0)}
	g.start = g.month.AddDate(0, 0, -3)
	g.emea = sim.New(sim.Options{Token: emeaToken, Seed: 21, Start: g.start, Now: clock, OrgName: "EMEA Media", Currency: "EUR"})
	g.us = sim.New(sim.Options{Token: usToken, Seed: 22, Start: g.start, Now: clock, OrgName: "US Media", Currency: "USD"})
	group, err := sim.NewGroup(g.emea, g.us)
	if err != nil {
		return nil, nil, err
	}
	srv := httptest.NewServer(group)
	g.url = srv.URL
	return g, srv, nil
}

// setEnv exports the organizations' tokens, and no base URL or database
// that would override a config's, for the test.
func (g *orgGroup) setEnv(t *testing.T) {
	t.Helper()
	t.Setenv("TALLY_TEST_TOKEN_EMEA", g.emea.Token())
	t.Setenv("TALLY_TEST_TOKEN_US", g.us.Token())
	t.Setenv("TALLY_BASE_URL", "")
	t.Setenv("TALLY_DB", "")
}

// config writes a config in dir listing the organizations named.
func (g *orgGroup) config(t *testing.T, dir string, orgs ...string) string {
	t.Helper()
	cfg, err := g.writeConfig(dir, orgs...)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func (g *orgGroup) writeConfig(dir string, orgs ...string) (string, error) {
	var list strings.Builder
	for _, o := range orgs {
		fmt.Fprintf(&list, "  - name: %s\n    token_env: TALLY_TEST_TOKEN_%s\n", o, strings.ToUpper(o))
	}
	cfg := filepath.Join(dir, "tally.yaml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(`api:
  base_url: %s
  max_retries: 0
  timeout: 20s
organizations:
%susage:
  granularity: day
  start: %s
  lookback: 1d
store:
  path: tally.duckdb
reports:
  dir: reports
  months: [previous]
  deliver:
    dir: deliver
schedule:
  lock_wait: 100ms
  jobs:
    - name: books
      cron: "@daily"
      run: [report, deliver]
%s`, g.url, list.String(), g.start.Format(tally.DateLayout), g.extra)), 0o600); err != nil {
		return "", err
	}
	return cfg, os.MkdirAll(filepath.Join(dir, "deliver"), 0o750)
}

// fetchedOrgGroup is newOrgGroup with both organizations in one config
// (config of emea and us) after tally fetch. The group and its fetch are
// made once per test binary, the group's interface serving until the
// binary ends; each test gets a copy of the fetched folder and the tokens
// in its environment.
func fetchedOrgGroup(t *testing.T) (g *orgGroup, cfg string) {
	t.Helper()
	g, err := sharedOrgGroup()
	if err != nil {
		t.Fatal(err)
	}
	g.setEnv(t)
	dir := placeFixture(t, orgGroupFetched)
	return g, filepath.Join(dir, "tally.yaml")
}

var sharedOrgGroup = sync.OnceValues(func() (*orgGroup, error) {
	g, srv, err := makeOrgGroup("tok-emea-7c1d9e04b2a36f58", "tok-us-5a8f2c6e9d0b1734")
	if err != nil {
		return nil, err
	}
	onBinaryEnd(srv.Close)
	return g, nil
})

// orgGroupFetched is the folder fetchedOrgGroup copies; the caller has
// exported the tokens.
var orgGroupFetched = onceFixture(func(dir string) error {
	g, err := sharedOrgGroup()
	if err != nil {
		return err
	}
	cfg, err := g.writeConfig(dir, "emea", "us")
	if err != nil {
		return err
	}
	var out string
	var fetchErr error
	stderr, err := captureStderr(func() { out, fetchErr = runCLI("", "fetch", "--config", cfg) })
	if err != nil {
		return err
	}
	if code := exitCode(fetchErr); code != 0 {
		return fmt.Errorf("tally fetch: exit %d\n%s\n%s", code, out, stderr)
	}
	return nil
})

// Organizations sharded across two deployments, one database each, each
// exporting to its own folder of one Parquet lake: DuckDB reads the lake
// as one table, and every organization's figures there are its shard's.
func TestShardsMergeInOneLake(t *testing.T) {
	g := newOrgGroup(t)
	lake := t.TempDir()
	var want []string
	for _, shard := range []string{"emea", "us"} {
		dir := t.TempDir()
		cfg := g.config(t, dir, shard)
		if _, code, stderr := cli(t, "fetch", "--config", cfg); code != job.ExitOK {
			t.Fatalf("fetch of shard %s: exit %d\n%s", shard, code, stderr)
		}
		if _, code, stderr := cli(t, "export", "--config", cfg, "--to", filepath.Join(lake, shard)); code != job.ExitOK {
			t.Fatalf("export of shard %s: exit %d\n%s", shard, code, stderr)
		}
		want = append(want, sums(t, filepath.Join(dir, "tally.duckdb"), "usage")...)
	}
	slices.Sort(want)
	got := sums(t, filepath.Join(t.TempDir(), "reader.duckdb"),
		"read_parquet('"+filepath.ToSlash(lake)+"/*/usage/*/*.parquet', hive_partitioning = true)")
	if !slices.Equal(got, want) || len(got) < 2 {
		t.Errorf("the lake read as one table:\n  %v\nwant each shard's figures:\n  %v", got, want)
	}
}

// sums is the usage value per organization, month and currency of the
// usage rows in from, a table or a table function.
func sums(t *testing.T, db, from string) []string {
	t.Helper()
	st, err := store.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	return prooftest.QueryStrings(t, st.DB(), `SELECT organization || ' ' || strftime(date, '%Y-%m') || ' ' || currency || ' ' || count(*) || ' ' || CAST(sum(cost) AS VARCHAR)
FROM `+from+` WHERE basis = 'usage' GROUP BY organization, strftime(date, '%Y-%m'), currency ORDER BY 1`)
}
