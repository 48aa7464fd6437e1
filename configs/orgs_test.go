package configs

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestOrganizationsParse(t *testing.T) {
	cfg := mustParse(t, `api:
  base_url: https://app.mk.io
  paths: {usage: /v2/usage}
usage:
  start: 2026-01-01
  meter_names: [m1]
organizations:
  - name: emea
    token_env: EMEA_TOKEN
  - name: us-east
    token_file: secrets/us
    base_url: http://127.0.0.1:9000
    project_names: [web]
    paths: {projects: /v9/projects}
`, noEnv)
	if !cfg.Grouped() {
		t.Fatal("Grouped() = false with organizations listed")
	}
	want := []Organization{
		{Name: "emea", BaseURL: "https://app.mk.io", TokenEnv: "EMEA_TOKEN", MeterNames: []string{"m1"},
			Paths: map[string]string{"usage": "/v2/usage"}, Field: "organizations[0]"},
		{Name: "us-east", BaseURL: "http://127.0.0.1:9000", TokenFile: "/etc/tally/secrets/us", ProjectNames: []string{"web"}, MeterNames: []string{"m1"},
			Paths: map[string]string{"usage": "/v2/usage", "projects": "/v9/projects"}, Field: "organizations[1]"},
	}
	if !reflect.DeepEqual(cfg.Organizations, want) {
		t.Errorf("organizations:\n got %+v\nwant %+v", cfg.Organizations, want)
	}
	q := cfg.QueryBase(cfg.Organizations[1])
	if q.Organization != "us-east" || !reflect.DeepEqual(q.ProjectNames, []string{"web"}) || q.Scope() != "projects=web;meters=m1" {
		t.Errorf("QueryBase(us-east) = %+v (scope %s)", q, q.Scope())
	}
	tok, err := cfg.OrgToken(cfg.Organizations[0], env("EMEA_TOKEN", "tok-emea", "TALLY_API_TOKEN", "tok-api"))
	if err != nil || tok.Reveal() != "tok-emea" {
		t.Errorf("OrgToken(emea) = %q, %v; want its own token", tok, err)
	}
	if _, err := cfg.OrgToken(cfg.Organizations[0], noEnv); err == nil || !strings.Contains(err.Error(), "organization emea's token") || !strings.Contains(err.Error(), "EMEA_TOKEN") {
		t.Errorf("OrgToken with the variable unset: %v; want an error naming the organization and the variable", err)
	}
	if _, err := cfg.Organization("nope"); err == nil || !strings.Contains(err.Error(), "emea, us-east") {
		t.Errorf("Organization(nope) = %v; want the names there are", err)
	}
	single := mustParse(t, minimal, noEnv)
	if single.Grouped() || len(single.Organizations) != 1 || single.Organizations[0].Name != "" {
		t.Errorf("the api: form: Grouped %v, organizations %+v; want one unnamed", single.Grouped(), single.Organizations)
	}
}

// TestLakeSourceTakesNames: a group job reading the lake lists its
// organizations by name alone, with no token anywhere, and a run of its
// fetch needs the lake's catalog password, not a token.
func TestLakeSourceTakesNames(t *testing.T) {
	cfg := mustParse(t, "usage:\n  start: 2026-01-01\n  source: lake\norganizations:\n  - name: emea\n  - name: us\nlake:\n  catalog: postgres://tally@db/lake\n  password_env: LAKE_PW\n", noEnv)
	if !cfg.Grouped() || len(cfg.Organizations) != 2 || cfg.Organizations[1].Name != "us" || cfg.Organizations[1].TokenEnv != "" {
		t.Fatalf("organizations %+v", cfg.Organizations)
	}
	if err := cfg.CheckSecrets(noEnv, []string{"fetch", "report"}); err == nil || !strings.Contains(err.Error(), "lake.password_env") {
		t.Fatalf("a fetch from the lake without its password: %v", err)
	}
}

func TestOrganizationsErrors(t *testing.T) {
	for _, tc := range []struct{ name, yml, want, usage string }{
		{"no name", "organizations:\n  - token_env: A\n", "organizations[0].name: missing", ""},
		{"bad name", "organizations:\n  - name: a/b\n    token_env: A\n", `organizations[0].name: "a/b" is not a name`, ""},
		{"twice", "organizations:\n  - name: a\n    token_env: A\n  - name: A\n    token_env: B\n", `organizations[1].name: "A" is also the name of organizations[0]`, ""},
		{"no token", "organizations:\n  - name: a\n", "organizations[0].token_env: missing", ""},
		{"both tokens", "organizations:\n  - name: a\n    token_env: A\n    token_file: f\n", "organizations[0].token_env and organizations[0].token_file: set one, not both", ""},
		{"api token too", "api:\n  token_env: X\norganizations:\n  - name: a\n    token_env: A\n", "with organizations: each organization names its own token", ""},
		{"empty base url", "organizations:\n  - name: a\n    token_env: A\n    base_url: ''\n", `organizations[0].base_url: "" is empty; leave the key out for api.base_url (https://app.mk.io), or give the organization's https:// address (line 6)`, ""},
		{"bad base url", "organizations:\n  - name: a\n    token_env: A\n    base_url: http://example.com\n", "organizations[0].base_url", ""},
		{"unknown key", "organizations:\n  - name: a\n    token_env: A\n    tokn: x\n", "organizations[0].tokn: unknown key", ""},
		{"budget of an unknown organization", "organizations:\n  - name: a\n    token_env: A\nbudgets:\n  - name: b\n    scope: organization:nope\n    currency: USD\n    amount: 1\n", `budgets[0].scope: organization "nope" is not in organizations: (a)`, ""},
		{"bad total", "api:\n  concurrency: 8\n  total_concurrency: 4\n", "api.total_concurrency: 4 is less than api.concurrency 8", ""},
		{"projects without names", "organizations:\n  - name: a\n    token_env: A\n    project_names: [p]\n  - name: b\n    token_env: B\n",
			"organizations[1].project_names: missing; usage.source projects reads", "  source: projects\n  granularity: day\n"},
		{"projects with meters", "organizations:\n  - name: a\n    token_env: A\n    project_names: [p]\n    meter_names: [m]\n",
			"organizations[0]: usage.source projects takes no payment_method_ids or meter_names", "  source: projects\n  granularity: day\n"},
		{"lake without organizations", "", "usage.source: lake reads the organizations: list's organizations from the lake's usage table: list them by name", "  source: lake\n"},
		{"lake with a token", "organizations:\n  - name: a\n    token_env: A\n", "organizations[0].token_env: usage.source lake reads the lake, not the interface: leave it out", "  source: lake\n"},
		{"lake with filters", "organizations:\n  - name: a\n    meter_names: [m]\n", "organizations[0]: usage.source lake takes no project_names, payment_method_ids, meter_names or paths", "  source: lake\n"},
		{"lake at week", "organizations:\n  - name: a\n", `usage.granularity: "week" with usage.source lake`, "  source: lake\n  granularity: week\n"},
		{"lake with usage filters", "organizations:\n  - name: a\n", "usage.source: lake takes no project_names, payment_method_ids, meter_names or reported_date", "  source: lake\n  reported_date: true\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte("usage:\n  start: 2026-01-01\n"+tc.usage+tc.yml), "/etc/tally", noEnv)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v; want it to contain %q", err, tc.want)
			}
		})
	}
}

// A token file that is not there is named by its key and its path, for
// each organization as for the api: form.
func TestOrgTokenFileMissingNamesTheKey(t *testing.T) {
	dir := t.TempDir()
	cfg, err := Parse([]byte("usage:\n  start: 2026-01-01\norganizations:\n  - name: a\n    token_env: A\n  - name: b\n    token_file: b-token\n"), dir, noEnv)
	if err != nil {
		t.Fatal(err)
	}
	_, err = cfg.OrgToken(cfg.Organizations[1], noEnv)
	want := "read organization b's token: organizations[1].token_file " + filepath.Join(dir, "b-token") + ": no such file or directory; put the token in that file (mode 600) or set organizations[1].token_env instead"
	if err == nil || err.Error() != want {
		t.Errorf("OrgToken(b) with its file missing: %v\nwant %s", err, want)
	}
}
