package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

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
	g := newOrgGroup(t)
	g.extra = ""
	cfg := g.config(t, t.TempDir(), "emea", "us")
	dir := filepath.Dir(cfg)
	db, rep := filepath.Join(dir, "tally.duckdb"), filepath.Join(dir, "reports")
	t.Setenv("USER", "controller")
	if _, code, stderr := cli(t, "fetch", "--config", cfg, "--log-format", "json"); code != exitOK {
		t.Fatalf("fetch: exit %d\n%s", code, stderr)
	}
	m := g.month.Format("2006-01")
	closed := func() string {
		t.Helper()
		return scalarText(t, db, `SELECT coalesce(string_agg(organization, ',' ORDER BY organization), '') FROM closed_months`)
	}

	// emea alone: its own final, its rows only.
	if _, code, stderr := cli(t, "report", "--config", cfg, "--month", m, "--org", "emea"); code != exitOK {
		t.Fatalf("report --org emea: exit %d\n%s", code, stderr)
	}
	out, code, stderr := cli(t, "close", "--config", cfg, "--month", m, "--org", "emea", "--reason", "EMEA signed off")
	emeaFinal := reports.FinalPath(rep, g.month, "emea", 1)
	if code != exitOK || !strings.Contains(out, emeaFinal) {
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
	if code != exitUsage || !strings.Contains(stderr, "already closed for organization emea") || !strings.Contains(stderr, "--org emea") {
		t.Fatalf("group close with emea closed: exit %d, want %d naming emea\n%s", code, exitUsage, stderr)
	}
	if _, code, stderr = cli(t, "close", "--config", cfg, "--month", m, "--org", "apac"); code != exitUsage || !strings.Contains(stderr, `--org "apac" is not an organization of this config: one of emea, us`) {
		t.Errorf("close --org apac: exit %d\n%s", code, stderr)
	}
	if _, code, stderr = cli(t, "close", "--config", cfg, "--month", m, "--org", "us", "--reopen", "--reason", "x"); code != exitUsage || !strings.Contains(stderr, "is not closed for organization us") {
		t.Errorf("reopen of us, never closed: exit %d\n%s", code, stderr)
	}
	if n := scalarText(t, db, `SELECT count(*) FROM month_closes`); n != "1" {
		t.Fatalf("%s month_closes rows after the refusals, want 1", n)
	}

	// Reopened, emea is open again; the group then closes every
	// organization at once.
	if _, code, stderr = cli(t, "close", "--config", cfg, "--month", m, "--org", "emea", "--reopen", "--reason", "credit note"); code != exitOK {
		t.Fatalf("reopen emea: exit %d\n%s", code, stderr)
	}
	if got := closed(); got != "" {
		t.Fatalf("closed_months after emea's reopen: %q, want none", got)
	}
	out, code, stderr = cli(t, "close", "--config", cfg, "--month", m, "--reason", "group signed off")
	groupFinal := reports.FinalPath(rep, g.month, "", 1)
	finals := map[string]string{"emea": reports.FinalPath(rep, g.month, "emea", 2), "us": reports.FinalPath(rep, g.month, "us", 1)}
	if code != exitOK || !strings.Contains(out, groupFinal) || !strings.Contains(out, finals["emea"]) || !strings.Contains(out, finals["us"]) {
		t.Fatalf("group close: exit %d, want the group's final and each organization's\n%s\n%s", code, out, stderr)
	}
	if got := closed(); got != "emea,us" {
		t.Fatalf("closed_months after the group close: %q, want emea,us", got)
	}
	byOrgAgrees(t, groupFinal, func(org string) string { return finals[org] }, "emea", "us")
	if _, code, stderr = cli(t, "close", "--config", cfg, "--month", m); code != exitUsage || !strings.Contains(stderr, "already closed for every organization") {
		t.Errorf("group close again: exit %d, want %d\n%s", code, exitUsage, stderr)
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
	if _, code, stderr = cli(t, "close", "--config", cfg, "--month", m, "--org", "us", "--reopen", "--reason", "late charge"); code != exitOK {
		t.Fatalf("reopen us: exit %d\n%s", code, stderr)
	}
	if got := closed(); got != "emea" {
		t.Fatalf("closed_months after us's reopen: %q, want emea", got)
	}
	if got := scalarText(t, db, `SELECT count(*) FROM closed_month_adjustments WHERE organization = 'us'`); got != "0" {
		t.Errorf("reopened us still has %s adjustment rows", got)
	}
	if _, code, stderr = cli(t, "close", "--config", cfg, "--month", m, "--org", "us", "--reason", "us signed off again"); code != exitOK {
		t.Fatalf("close us again: exit %d\n%s", code, stderr)
	}
	finals["us"] = reports.FinalPath(rep, g.month, "us", 2)
	status, code, stderr := cli(t, "status", "--config", cfg)
	for _, want := range []string{"(group)", groupFinal, finals["emea"], finals["us"]} {
		if code != exitOK || !strings.Contains(status, want) {
			t.Errorf("status: exit %d, want the closes in force naming %s\n%s\n%s", code, want, status, stderr)
		}
	}
	if strings.Contains(status, reports.FinalPath(rep, g.month, "us", 1)) {
		t.Errorf("status shows us's first final, reopened since:\n%s", status)
	}

	// Delivery sends the finals in force: the group's to the folder, each
	// organization's to its own.
	if _, code, stderr := cli(t, "run", "--config", cfg); code != exitOK {
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
