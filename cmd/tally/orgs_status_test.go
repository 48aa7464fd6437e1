package main

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tally-dev/tally/job"
)

// tally status with several organizations (on one address, told apart by
// token) tells them apart: each loaded span and each gap in its JSON
// carries its organization; a close of every organization at once is
// whole_store in closed_months for each; and each organization's own token
// is read for its expiry, warned of within api.token_warn_before and, when
// expired, said to stop that organization's fetch, which then sends
// nothing with it.
func TestStatusOfSeveralOrganizations(t *testing.T) {
	now := time.Now().UTC()
	emeaExp := now.AddDate(0, 0, 5).Truncate(time.Second)
	usExp := now.AddDate(0, 0, 300).Truncate(time.Second)
	g := newOrgGroupTokens(t, jwtToken(emeaExp, "emea@example.com"), jwtToken(usExp, "us@example.com"))
	cfg := g.config(t, t.TempDir(), "emea", "us")
	dir := filepath.Dir(cfg)
	db := filepath.Join(dir, "tally.duckdb")
	// An expired token the status must not take for the group's: the api:
	// form's variable, unused with organizations:.
	t.Setenv("TALLY_API_TOKEN", jwtToken(now.AddDate(0, 0, -1), "nobody@example.com"))

	type status struct {
		Loaded []struct {
			Organization string `json:"organization"`
		} `json:"loaded"`
		Gaps []struct {
			Organization string `json:"organization"`
			Start        string `json:"start"`
		} `json:"gaps"`
		TokenExpires *time.Time `json:"token_expires"`
		Tokens       []struct {
			Organization string     `json:"organization"`
			Expires      *time.Time `json:"expires"`
			Warning      string     `json:"warning"`
		} `json:"tokens"`
	}
	statusJSON := func(cfg string) status {
		t.Helper()
		out, code, stderr := cli(t, "status", "--config", cfg, "--format", "json")
		if code != job.ExitOK {
			t.Fatalf("status --format json: exit %d\n%s\n%s", code, out, stderr)
		}
		var st status
		if err := json.Unmarshal([]byte(out), &st); err != nil {
			t.Fatalf("status JSON: %v\n%s", err, out)
		}
		return st
	}
	orgsOf := func(what string, orgs []string) {
		t.Helper()
		slices.Sort(orgs)
		if got := slices.Compact(orgs); !slices.Equal(got, []string{"emea", "us"}) {
			t.Errorf("status JSON %s entries of organizations %q, want each naming emea or us, both there", what, orgs)
		}
	}

	// Two spans of days with a hole between, in each organization.
	day := func(n int) string { return g.start.AddDate(0, 0, n).Format("2006-01-02") }
	for _, span := range [][2]string{{day(0), day(3)}, {day(10), day(12)}} {
		if _, code, stderr := cli(t, "fetch", "--config", cfg, "--from", span[0], "--to", span[1]); code != job.ExitOK {
			t.Fatalf("fetch %v: exit %d\n%s", span, code, stderr)
		}
	}
	st := statusJSON(cfg)
	var orgs []string
	for _, l := range st.Loaded {
		orgs = append(orgs, l.Organization)
	}
	orgsOf("loaded", orgs)
	orgs = nil
	for _, gap := range st.Gaps {
		orgs = append(orgs, gap.Organization)
		if gap.Start != day(3) {
			t.Errorf("gap of %s from %s, want from %s", gap.Organization, gap.Start, day(3))
		}
	}
	orgsOf("gaps", orgs)

	// Each organization's token, not api.token_env's.
	if st.TokenExpires != nil {
		t.Errorf("token_expires %v: the api: form's variable, which organizations: do not use", st.TokenExpires)
	}
	byOrg := map[string]int{}
	for i, tk := range st.Tokens {
		byOrg[tk.Organization] = i
	}
	if len(st.Tokens) != 2 {
		t.Fatalf("status tokens %+v, want emea's and us's", st.Tokens)
	}
	emea, us := st.Tokens[byOrg["emea"]], st.Tokens[byOrg["us"]]
	if emea.Expires == nil || !emea.Expires.Equal(emeaExp) || !strings.Contains(emea.Warning, "organization emea's API token expires in 5.0 days") ||
		!strings.Contains(emea.Warning, "the environment variable TALLY_TEST_TOKEN_EMEA (organizations[0].token_env / organizations[0].token_file)") {
		t.Errorf("emea's token %+v, want its expiry %s warned of, naming its key", emea, emeaExp)
	}
	if us.Expires == nil || !us.Expires.Equal(usExp) || us.Warning != "" {
		t.Errorf("us's token %+v, want its expiry %s and no warning", us, usExp)
	}
	table, code, stderr := cli(t, "status", "--config", cfg)
	lines := map[string]string{}
	for _, l := range strings.Split(table, "\n") {
		if head, rest, ok := strings.Cut(l, ")"); ok && strings.HasPrefix(head, "token expires (") {
			lines[strings.TrimPrefix(head, "token expires (")] = strings.TrimSpace(rest)
		}
	}
	if code != job.ExitOK || lines["emea"] != emeaExp.Format(time.RFC3339)+" (in 5 days: create a new personal API token in the web application soon)" ||
		lines["us"] != usExp.Format(time.RFC3339)+" (in 300 days)" || len(lines) != 2 {
		t.Errorf("status table: exit %d, want each organization's token expiry:\n%s\n%s", code, table, stderr)
	}

	// Closed all at once: whole_store for each organization.
	if _, code, stderr := cli(t, "fetch", "--config", cfg); code != job.ExitOK {
		t.Fatalf("fetch: exit %d\n%s", code, stderr)
	}
	if _, code, stderr := cli(t, "close", "--config", cfg, "--month", g.month.Format("2006-01"), "--reason", "group signed off"); code != job.ExitOK {
		t.Fatalf("close of every organization: exit %d\n%s", code, stderr)
	}
	if got := scalarText(t, db, `SELECT string_agg(organization || ':' || whole_store, ',' ORDER BY organization) FROM closed_months`); got != "emea:true,us:true" {
		t.Errorf("closed_months after closing every organization at once: %q, want emea:true,us:true", got)
	}
	orgs = nil
	for _, l := range statusJSON(cfg).Loaded {
		orgs = append(orgs, l.Organization)
	}
	orgsOf("loaded", orgs)

	// An organization whose token expired: status says so, and its fetch
	// sends nothing with it while the others load.
	t.Setenv("TALLY_TEST_TOKEN_US", jwtToken(now.AddDate(0, 0, -2).Truncate(time.Second), "us@example.com"))
	st = statusJSON(cfg)
	for _, tk := range st.Tokens {
		if tk.Organization == "us" && !strings.Contains(tk.Warning, "organization us's API token expired on ") {
			t.Errorf("us's expired token: warning %q", tk.Warning)
		}
	}
	sent := g.us.Requests()
	if _, code, stderr := cli(t, "fetch", "--config", cfg); code != job.ExitPartial || !strings.Contains(stderr, "organization us's API token expired on ") {
		t.Errorf("fetch with us's token expired: exit %d, want %d naming it\n%s", code, job.ExitPartial, stderr)
	}
	if n := g.us.Requests(); n != sent {
		t.Errorf("%d requests sent with us's expired token", n-sent)
	}
}
