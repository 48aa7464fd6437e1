package main

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tally-dev/tally"
	"github.com/tally-dev/tally/job"
)

// Commands that send nothing to the interface need no API token: with the
// token's variable unset after a fetch, a job of report and close steps
// runs (with --job and as the only job), tally close closes a month and
// tally alerts --dry-run lists, none sending a request; tally fetch still
// refuses, naming the variable.
func TestCommandsThatSendNothingNeedNoToken(t *testing.T) {
	now := time.Now().UTC()
	month := tally.Month.Truncate(now).AddDate(0, -1, 0)
	s := newCLISim(t, month)
	cfg, db := cliConfig(t, s, month, `  jobs:
    - name: books
      cron: "@daily"
      run: [report, alerts]
budgets:
  - {name: all, currency: USD, amount: 1000000}
`)
	if _, code, stderr := cli(t, "fetch", "--config", cfg); code != job.ExitOK {
		t.Fatalf("fetch: exit %d\n%s", code, stderr)
	}
	sent := s.sim.Requests()
	t.Setenv(cliTokenEnv, "")
	m := month.Format("2006-01")
	for _, args := range [][]string{
		{"run", "--config", cfg, "--job", "books"},
		{"run", "--config", cfg},
		{"alerts", "--config", cfg, "--dry-run"},
		{"alerts", "--config", cfg},
		{"close", "--config", cfg, "--month", m, "--reason", "signed off"},
	} {
		if out, code, stderr := cli(t, args...); code != job.ExitOK {
			t.Errorf("%v with no token: exit %d, want 0: it sends nothing to the interface\n%s\n%s", args[:len(args)-2], code, out, stderr)
		}
	}
	if n := s.sim.Requests(); n != sent {
		t.Errorf("%d requests sent by commands that fetch nothing", n-sent)
	}
	if got := scalarText(t, db, `SELECT string_agg(DISTINCT command || ':' || coalesce(job, '') || ':' || status, ',' ORDER BY command || ':' || coalesce(job, '') || ':' || status) FROM runs`); got != "alerts::ok,close::ok,fetch::ok,run:books:ok" {
		t.Errorf("runs recorded %q, want every command's run ok", got)
	}
	if got := scalarText(t, db, `SELECT count(*) FROM closed_months`); got != "1" {
		t.Errorf("closed_months has %s rows, want the month closed without a token", got)
	}
	_, code, stderr := cli(t, "fetch", "--config", cfg)
	if code != job.ExitRefused || !strings.Contains(stderr, "environment variable "+cliTokenEnv+" is not set or empty") {
		t.Errorf("fetch with no token: exit %d, want %d naming %s\n%s", code, job.ExitRefused, cliTokenEnv, stderr)
	}
}

// A secret a configured step needs is read when the config loads, before
// the store is touched or anything is sent: an unset webhook secret stops
// fetch and run (fetch ends with the alerts check), an unset mail password
// a job that delivers, each with exit 2 naming the key and the variable.
func TestMissingSecretsRefusedBeforeAnythingRuns(t *testing.T) {
	start := tally.Day.Truncate(time.Now().UTC()).AddDate(0, 0, -5)
	s := newCLISim(t, start)
	cfg, db := cliConfig(t, s, start, `  jobs:
    - name: mail
      cron: "@daily"
      run: [report, deliver]
alerts:
  webhook:
    url: http://127.0.0.1:9/incoming/a7f3c9e1d2b4
    secret_env: TALLY_TEST_WEBHOOK_SECRET
`)
	text, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	withSMTP := strings.Replace(string(text), "  months: [previous]\n", `  months: [previous]
  deliver:
    smtp: {host: 127.0.0.1, port: 2525, from: tally@example.com, to: [finance@example.com], username: tally, password_env: TALLY_TEST_SMTP_PASSWORD}
`, 1)
	if withSMTP == string(text) {
		t.Fatal("config has no reports.months line to add reports.deliver after")
	}
	if err := os.WriteFile(cfg, []byte(withSMTP), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TALLY_TEST_WEBHOOK_SECRET", "")
	t.Setenv("TALLY_TEST_SMTP_PASSWORD", "")
	webhook := "alerts.webhook.secret_env: the environment variable TALLY_TEST_WEBHOOK_SECRET is not set or empty"
	smtp := "reports.deliver.smtp.password_env: the environment variable TALLY_TEST_SMTP_PASSWORD is not set or empty"
	for _, c := range []struct {
		args    []string
		want    []string
		notWant string
	}{
		{[]string{"fetch", "--config", cfg}, []string{webhook}, smtp},
		{[]string{"run", "--config", cfg, "--job", "mail"}, []string{smtp}, webhook},
	} {
		_, code, stderr := cli(t, c.args...)
		if code != job.ExitRefused {
			t.Errorf("%v: exit %d, want %d\n%s", c.args[:1], code, job.ExitRefused, stderr)
		}
		for _, w := range c.want {
			if !strings.Contains(stderr, w) {
				t.Errorf("%v: stderr does not say %q:\n%s", c.args[:1], w, stderr)
			}
		}
		if c.notWant != "" && strings.Contains(stderr, c.notWant) {
			t.Errorf("%v: stderr names a secret its steps do not need (%q):\n%s", c.args[:1], c.notWant, stderr)
		}
	}
	if n := s.sim.Requests(); n != 0 {
		t.Errorf("%d requests sent before the missing secrets were refused", n)
	}
	for _, p := range []string{db, filepath.Join(filepath.Dir(db), "reports")} {
		if _, err := os.Stat(p); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s exists (%v): the refused commands touched it", p, err)
		}
	}
}
