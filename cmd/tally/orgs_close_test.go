package main

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tally-dev/tally"
	"github.com/tally-dev/tally/fetch/sim"
	"github.com/tally-dev/tally/internal/testkit/prooftest"
	"github.com/tally-dev/tally/job"
	"github.com/tally-dev/tally/reports"
	"github.com/tally-dev/tally/store"
)

// A group closes its organizations one by one or all at once. emea closes
// alone with its own final workbook (its rows only), and the group close
// then refuses, naming emea; reopened, the group closes every organization
// at once: each organization's final and the group's, the group's By
// organization agreeing with each organization's final. A late charge for
// us is an adjustment of us alone, in closed_month_adjustments and as a
// FOCUS Correction; us reopened and closed again gets its next final, and
// delivery sends the finals in force, each organization's to its folder.
func TestOrganizationsCloseApartAndTogether(t *testing.T) {
	g, cfg := fetchedOrgGroup(t)
	dir := filepath.Dir(cfg)
	db, rep := filepath.Join(dir, "tally.duckdb"), filepath.Join(dir, "reports")
	t.Setenv("USER", "controller")
	m := g.month.Format("2006-01")
	closed := func() string {
		t.Helper()
		return scalarText(t, db, `SELECT coalesce(string_agg(organization, ',' ORDER BY organization), '') FROM closed_months`)
	}

	// emea alone: its own final, its rows only.
	if _, code, stderr := cli(t, "report", "--config", cfg, "--month", m, "--org", "emea"); code != job.ExitOK {
		t.Fatalf("report --org emea: exit %d\n%s", code, stderr)
	}
	out, code, stderr := cli(t, "close", "--config", cfg, "--month", m, "--org", "emea", "--reason", "EMEA signed off")
	emeaFinal := reports.FinalPath(rep, g.month, "emea", 1)
	if code != job.ExitOK || !strings.Contains(out, emeaFinal) {
		t.Fatalf("close --org emea: exit %d, want %s\n%s\n%s", code, emeaFinal, out, stderr)
	}
	if got := closed(); got != "emea" {
		t.Fatalf("closed_months after emea's close: %q, want emea alone", got)
	}
	sameSummary(t, emeaFinal, reports.OrgPath(rep, g.month, "emea"))
	if _, err := os.Stat(reports.FinalPath(rep, g.month, "", 1)); err == nil {
		t.Error("emea's close wrote the group's final workbook")
	}

	// The group close refuses while emea is closed on its own, naming it,
	// and changes nothing.
	_, code, stderr = cli(t, "close", "--config", cfg, "--month", m, "--reason", "group")
	if code != job.ExitRefused || !strings.Contains(stderr, "already closed for organization emea") || !strings.Contains(stderr, "--org emea") {
		t.Fatalf("group close with emea closed: exit %d, want %d naming emea\n%s", code, job.ExitRefused, stderr)
	}
	if _, code, stderr = cli(t, "close", "--config", cfg, "--month", m, "--org", "apac"); code != job.ExitRefused || !strings.Contains(stderr, `--org "apac" is not an organization of this config: one of emea, us`) {
		t.Errorf("close --org apac: exit %d\n%s", code, stderr)
	}
	if _, code, stderr = cli(t, "close", "--config", cfg, "--month", m, "--org", "us", "--reopen", "--reason", "x"); code != job.ExitRefused || !strings.Contains(stderr, "is not closed for organization us") {
		t.Errorf("reopen of us, never closed: exit %d\n%s", code, stderr)
	}
	if n := scalarText(t, db, `SELECT count(*) FROM month_closes`); n != "1" {
		t.Fatalf("%s month_closes rows after the refusals, want 1", n)
	}

	// Reopened, emea is open again; the group then closes every
	// organization at once.
	if _, code, stderr = cli(t, "close", "--config", cfg, "--month", m, "--org", "emea", "--reopen", "--reason", "credit note"); code != job.ExitOK {
		t.Fatalf("reopen emea: exit %d\n%s", code, stderr)
	}
	if got := closed(); got != "" {
		t.Fatalf("closed_months after emea's reopen: %q, want none", got)
	}
	out, code, stderr = cli(t, "close", "--config", cfg, "--month", m, "--reason", "group signed off")
	groupFinal := reports.FinalPath(rep, g.month, "", 1)
	finals := map[string]string{"emea": reports.FinalPath(rep, g.month, "emea", 2), "us": reports.FinalPath(rep, g.month, "us", 1)}
	if code != job.ExitOK || !strings.Contains(out, groupFinal) || !strings.Contains(out, finals["emea"]) || !strings.Contains(out, finals["us"]) {
		t.Fatalf("group close: exit %d, want the group's final and each organization's\n%s\n%s", code, out, stderr)
	}
	if got := closed(); got != "emea,us" {
		t.Fatalf("closed_months after the group close: %q, want emea,us", got)
	}
	byOrgAgrees(t, groupFinal, func(org string) string { return finals[org] }, "emea", "us")
	if _, code, stderr = cli(t, "close", "--config", cfg, "--month", m); code != job.ExitRefused || !strings.Contains(stderr, "already closed for every organization") {
		t.Errorf("group close again: exit %d, want %d\n%s", code, job.ExitRefused, stderr)
	}
	if n := scalarText(t, db, `SELECT count(*) FROM month_closes WHERE action = 'close' AND acted_at = (SELECT max(acted_at) FROM month_closes)`); n != "3" {
		t.Errorf("the group close recorded %s closes, want 3 (emea, us, the group)", n)
	}

	// A late charge for us: us's adjustment alone, also in FOCUS.
	func() {
		st, err := store.Open(context.Background(), db)
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		if _, err := st.DB().Exec(`UPDATE usage SET cost = cost + 1 WHERE rowid = (SELECT min(rowid) FROM usage WHERE organization = 'us' AND "date" >= ? AND "date" < ?)`,
			g.month, g.month.AddDate(0, 1, 0)); err != nil {
			t.Fatal(err)
		}
	}()
	if got := scalarText(t, db, `SELECT string_agg(organization || ' ' || CAST(difference AS VARCHAR), ',') FROM closed_month_adjustments WHERE difference <> 0`); got != "us 1.000000000000" {
		t.Errorf("adjustments after a late charge for us: %q, want us's 1 alone", got)
	}
	if got := scalarText(t, db, `SELECT string_agg(DISTINCT x_Organization, ',') FROM focus WHERE ChargeClass = 'Correction'`); got != "us" {
		t.Errorf("FOCUS corrections of %q, want us's", got)
	}

	// us reopened and closed again: its next final, with the late charge;
	// emea and the group's finals stay in force.
	if _, code, stderr = cli(t, "close", "--config", cfg, "--month", m, "--org", "us", "--reopen", "--reason", "late charge"); code != job.ExitOK {
		t.Fatalf("reopen us: exit %d\n%s", code, stderr)
	}
	if got := closed(); got != "emea" {
		t.Fatalf("closed_months after us's reopen: %q, want emea", got)
	}
	if got := scalarText(t, db, `SELECT count(*) FROM closed_month_adjustments WHERE organization = 'us'`); got != "0" {
		t.Errorf("reopened us still has %s adjustment rows", got)
	}
	if _, code, stderr := cli(t, "report", "--config", cfg, "--month", m); code != job.ExitOK {
		t.Fatalf("report: exit %d\n%s", code, stderr)
	}
	if st, err := readStatus(reports.DefaultPath(rep, g.month)); err != nil || !strings.Contains(st, "Reopened since for organization us") {
		t.Errorf("the group workbook's month status %q (%v), want it to say us was reopened since", st, err)
	}
	if _, code, stderr = cli(t, "close", "--config", cfg, "--month", m, "--org", "us", "--reason", "us signed off again"); code != job.ExitOK {
		t.Fatalf("close us again: exit %d\n%s", code, stderr)
	}
	finals["us"] = reports.FinalPath(rep, g.month, "us", 2)
	status, code, stderr := cli(t, "status", "--config", cfg)
	for _, want := range []string{"(group)", groupFinal, finals["emea"], finals["us"]} {
		if code != job.ExitOK || !strings.Contains(status, want) {
			t.Errorf("status: exit %d, want the closes in force naming %s\n%s\n%s", code, want, status, stderr)
		}
	}
	if strings.Contains(status, reports.FinalPath(rep, g.month, "us", 1)) {
		t.Errorf("status shows us's first final, reopened since:\n%s", status)
	}

	// Delivery sends the finals in force: the group's to the folder, each
	// organization's to its own.
	if _, code, stderr := cli(t, "run", "--config", cfg); code != job.ExitOK {
		t.Fatalf("run [report, deliver]: exit %d\n%s", code, stderr)
	}
	for org, final := range map[string]string{"": groupFinal, "emea": finals["emea"], "us": finals["us"]} {
		want, err := os.ReadFile(final)
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join(dir, "deliver", org, filepath.Base(final)))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("delivered final of %q: %v; want %s as closed", org, err, final)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "deliver", "us", filepath.Base(reports.FinalPath(rep, g.month, "us", 1)))); err == nil {
		t.Error("us's first final, reopened before any delivery, was delivered")
	}
}

// sameSummary checks that two workbooks' Summary tables (currency, totals)
// are the same.
func sameSummary(t *testing.T, a, b string) {
	t.Helper()
	sa, err := reports.ReadSummary(a)
	if err != nil {
		t.Fatal(err)
	}
	sb, err := reports.ReadSummary(b)
	if err != nil {
		t.Fatal(err)
	}
	if len(sa.Rows) == 0 || len(sa.Rows) != len(sb.Rows) {
		t.Fatalf("Summary of %s has %d rows, %s %d", a, len(sa.Rows), b, len(sb.Rows))
	}
	for i := range sa.Rows {
		if strings.Join(sa.Rows[i], "|") != strings.Join(sb.Rows[i], "|") {
			t.Errorf("Summary row %d: %s has %v, %s %v", i, a, sa.Rows[i], b, sb.Rows[i])
		}
	}
}

// TestGroupCloseKilledAtAnyMoment: a real group close of two organizations
// (three final workbooks: each organization's and the group's) killed
// with SIGKILL at random moments, the moment a staged final appears and
// the moment a final appears under its name. After every kill the month
// is untouched or closed for every organization at once: all three closes
// recorded, each final in place or staged with the recorded bytes. A
// rerun completes it, leaving every final in place and nothing staged.
func TestGroupCloseKilledAtAnyMoment(t *testing.T) {
	g, cfg := fetchedOrgGroup(t)
	dir := filepath.Dir(cfg)
	db, monthDir := filepath.Join(dir, "tally.duckdb"), filepath.Join(dir, "reports", g.month.Format("2006-01"))
	t.Setenv("USER", "closer")
	bin := tallyBinary(t)
	m := g.month.Format("2006-01")
	closeArgs := []string{"close", "--month", m, "--reason", "group signed off", "--config", cfg, "--log-format", "json"}
	do := func(args ...string) ([]byte, error) {
		cmd := exec.Command(bin, args...)
		cmd.Dir = dir
		return cmd.CombinedOutput()
	}
	reopen := func() {
		t.Helper()
		if out, err := do("close", "--config", cfg, "--month", m, "--reopen", "--reason", "trial"); err != nil {
			t.Fatalf("reopen: %v\n%s", err, out)
		}
	}
	began := time.Now()
	if out, err := do(closeArgs...); err != nil {
		t.Fatalf("close: %v\n%s", err, out)
	}
	full := time.Since(began)
	reopen()

	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 27))
	killed, states := 0, map[string]int{}
	for i := 0; killed < 12 && i < 20; i++ {
		cmd := exec.Command(bin, closeArgs...)
		cmd.Dir = dir
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		switch i % 3 {
		case 0:
			time.Sleep(time.Duration(rng.Int64N(int64(full))))
		case 1:
			waitForTree(monthDir, func(name string) bool { return strings.HasSuffix(name, ".staged") }, full*4)
		case 2:
			before := treeNames(monthDir)
			waitForTree(monthDir, func(name string) bool {
				return strings.Contains(name, "-final") && strings.HasSuffix(name, ".xlsx") && !before[name]
			}, full*4)
		}
		if proofKillNow(t, cmd) {
			killed++
		}
		label := fmt.Sprintf("trial %d", i)
		states[groupCloseConsistent(t, db, monthDir, label, false)]++
		if out, err := do(closeArgs...); err != nil && !strings.Contains(string(out), "already closed for every organization") {
			t.Fatalf("%s: the rerun did not complete the close: %v\n%s", label, err, out)
		}
		groupCloseConsistent(t, db, monthDir, label+", rerun", true)
		reopen()
	}
	if killed < 12 {
		t.Fatalf("fewer than 12 group closes were killed")
	}
	t.Logf("after the kills: %v (a whole group close takes %s)", states, full.Round(time.Millisecond))
}

// groupCloseConsistent checks what a group close left: the latest action
// a reopen (untouched), or the three closes of one group close, each final
// in place or staged with the recorded bytes; with whole, closed with
// every final in place and no staged or temporary file left.
func groupCloseConsistent(t *testing.T, db, monthDir, label string, whole bool) string {
	t.Helper()
	type rec struct{ org, action, final, sha, id string }
	var recs []rec
	prooftest.WithDB(t, db, func(db *sql.DB) {
		rows, err := db.Query(`SELECT coalesce(organization, ''), action, coalesce(final_workbook, ''), coalesce(final_sha256, ''), CAST(id AS VARCHAR)
FROM month_closes WHERE acted_at = (SELECT max(acted_at) FROM month_closes) ORDER BY ALL`)
		if err != nil {
			t.Fatalf("%s: %v", label, err)
		}
		defer rows.Close()
		for rows.Next() {
			var r rec
			if err := rows.Scan(&r.org, &r.action, &r.final, &r.sha, &r.id); err != nil {
				t.Fatal(err)
			}
			recs = append(recs, r)
		}
	})
	if len(recs) == 1 && recs[0].action == "reopen" {
		if whole {
			t.Fatalf("%s: the month is not closed", label)
		}
		return "untouched"
	}
	state := "closed"
	if len(recs) != 3 {
		t.Fatalf("%s: the latest close recorded %d rows %v, want 3 (emea, us, the group)", label, len(recs), recs)
	}
	for _, r := range recs {
		got, err := fileSum(r.final)
		if err != nil {
			if whole {
				t.Fatalf("%s: the close of %q is recorded but its final is not in place: %v", label, r.org, err)
			}
			state = "recorded, a final still staged"
			staged := filepath.Join(filepath.Dir(r.final), "."+filepath.Base(r.final)+"."+r.id+".staged")
			if got, err = fileSum(staged); err != nil {
				t.Fatalf("%s: the close of %q is recorded, but neither its final nor its staged file is there: %v", label, r.org, err)
			}
		}
		if got != r.sha {
			t.Fatalf("%s: the final of %q has sha256 %s, recorded %s", label, r.org, got, r.sha)
		}
	}
	if whole {
		for name := range treeNames(monthDir) {
			if strings.HasPrefix(filepath.Base(name), ".") {
				t.Fatalf("%s: %s is left in the reports folder", label, name)
			}
		}
	}
	return state
}

// treeNames lists the files under dir, by path relative to it.
func treeNames(dir string) map[string]bool {
	out := map[string]bool{}
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(dir, p)
			out[rel] = true
		}
		return nil
	})
	return out
}

// waitForTree polls the files under dir until a name matches, or d passes.
func waitForTree(dir string, match func(string) bool, d time.Duration) {
	for deadline := time.Now().Add(d); time.Now().Before(deadline); {
		for name := range treeNames(dir) {
			if match(filepath.Base(name)) {
				return
			}
		}
		time.Sleep(time.Millisecond)
	}
}

// usage.source projects with organizations: each organization reads its
// own projects' reports with its own token, into its own rows; one
// organization's expired token fails it alone.
func TestOrganizationsReadTheirProjects(t *testing.T) {
	g := newOrgGroup(t)
	cfg := g.config(t, t.TempDir(), "emea", "us")
	projects := map[string][]string{"emea": {"archive", "newsroom"}, "us": {"newsroom", "sports-live"}}
	b, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Replace(string(b), "usage:\n", "usage:\n  source: projects\n", 1)
	for org, ps := range projects {
		own := fmt.Sprintf("    token_env: TALLY_TEST_TOKEN_%s\n", strings.ToUpper(org))
		text = strings.Replace(text, own, own+"    project_names: ["+strings.Join(ps, ", ")+"]\n", 1)
	}
	if err := os.WriteFile(cfg, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(filepath.Dir(cfg), "tally.duckdb")
	plan, code, stderr := cli(t, "plan", "--config", cfg)
	if code != job.ExitOK || !strings.Contains(plan, "4 project(s) (emea: archive, newsroom; us: newsroom, sports-live)") {
		t.Errorf("plan: exit %d, want each organization's projects\n%s\n%s", code, plan, stderr)
	}
	if _, code, stderr := cli(t, "fetch", "--config", cfg, "--log-format", "json"); code != job.ExitOK {
		t.Fatalf("fetch: exit %d\n%s", code, stderr)
	}
	// Each organization's snapshot is its own interface's report of its
	// own projects: the quantities per meter, month to date.
	var want []string
	for org, s := range map[string]*sim.Server{"emea": g.emea, "us": g.us} {
		now := time.Now().UTC()
		from := time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, time.UTC)
		for _, p := range projects[org] {
			byMeter := map[string]float64{}
			for _, r := range s.Rows(tally.UsageQuery{Window: tally.Window{Start: from, End: from.AddDate(0, 1, 0), Granularity: tally.Month}, ProjectNames: []string{p}}) {
				byMeter[r.MeterName] += r.Quantity
			}
			for m, q := range byMeter {
				want = append(want, fmt.Sprintf("%s|%s|%s|%.4f", org, p, m, q))
			}
		}
	}
	slices.Sort(want)
	got := scalarText(t, db, `SELECT coalesce(string_agg(organization || '|' || project || '|' || meter_name || '|' || CAST(CAST(quantity AS DECIMAL(38, 4)) AS VARCHAR), ',' ORDER BY organization, project, meter_name), '') FROM project_usage_snapshots`)
	if got != strings.Join(want, ",") {
		t.Errorf("project reports kept\n  %s\nwant each organization's own\n  %s", got, strings.Join(want, ","))
	}
	// Each organization's estimate is priced from its own rate cards, in
	// its own currency.
	if n := scalarText(t, db, `SELECT count(*) FROM usage WHERE basis = 'estimated' AND NOT ((organization = 'emea' AND currency = 'EUR') OR (organization = 'us' AND currency = 'USD'))`); n != "0" {
		t.Errorf("%s estimated rows in another organization's currency", n)
	}
	if got := scalarText(t, db, `SELECT count(DISTINCT organization || project) FROM usage WHERE basis = 'estimated'`); len(want) > 0 && got != "4" {
		t.Errorf("estimated usage of %s organization projects, want 4", got)
	}

	// us's token expires: us fails alone, sending nothing.
	t.Setenv("TALLY_TEST_TOKEN_US", jwtToken(time.Now().Add(-time.Hour), "us@example.com"))
	sentUS := g.us.Requests()
	_, code, stderr = cli(t, "fetch", "--config", cfg, "--log-format", "json")
	if code != job.ExitPartial || !strings.Contains(stderr, "organization us not fetched") {
		t.Fatalf("fetch with us's token expired: exit %d, want %d naming us\n%s", code, job.ExitPartial, stderr)
	}
	if g.us.Requests() != sentUS {
		t.Errorf("%d requests went to us with its expired token", g.us.Requests()-sentUS)
	}
	if n := scalarText(t, db, `SELECT count(DISTINCT run_id) FROM project_usage_snapshots WHERE organization = 'emea'`); n != "2" {
		t.Errorf("emea's projects were read in %s runs, want 2 (the partial run read them too)", n)
	}
}
