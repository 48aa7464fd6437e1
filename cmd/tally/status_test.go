package main

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/tally-dev/tally/store"
)

func TestStatusCommand(t *testing.T) {
	cfg, db := queryFixture(t, false)

	out, err := execCLI(t, "", "status", "--config", cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "none yet: tally fetch --config "+cfg) || strings.Contains(out, "LAST RUNS") {
		t.Fatalf("before the first publish:\n%s", out)
	}

	s, err := store.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Publish(context.Background()); err != nil {
		t.Fatal(err)
	}
	s.Close()
	lock, err := store.AcquireLock(context.Background(), db, "fetch", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Release()

	out, err = execCLI(t, "", "status", "--config", cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"LAST RUNS", "fetch", "nightly", " ok ",
		"day          usage  all    2026-01-30  2026-02-02  1        3",
		"GAPS", "none",
		"latest usage   2026-02-01T00:00:00Z",
		"running now  pid ", `command "fetch"`,
	} {
		if !strings.Contains(out, want) {
			t.Fatalf("status lacks %q:\n%s", want, out)
		}
	}

	out, err = execCLI(t, "", "status", "--config", cfg, "--format", "json")
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Database    string
		PublishedAt *time.Time `json:"published_at"`
		Writer      *store.LockInfo
		Runs        []map[string]any
		Loaded      []map[string]any
		Gaps        []map[string]any
		Freshness   map[string]*time.Time
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("json %s: %v", out, err)
	}
	if rep.Database != db || rep.PublishedAt == nil || rep.Writer == nil || rep.Writer.Command != "fetch" ||
		len(rep.Runs) != 1 || rep.Runs[0]["status"] != "ok" || len(rep.Loaded) != 1 || rep.Loaded[0]["start"] != "2026-01-30" ||
		rep.Gaps == nil || len(rep.Gaps) != 0 || rep.Freshness["latest_usage_date"] == nil {
		t.Fatalf("json status: %s", out)
	}

	for _, args := range [][]string{{"status"}, {"status", "--config", cfg, "--format", "csv"}} {
		if _, err := execCLI(t, "", args...); !isUsageError(err) {
			t.Errorf("%v: %v, want a usage error", args, err)
		}
	}
}

// tally status shows each budget's month and exits 2 naming a budget whose
// scope never bills in its currency, or whose project has no usage at all:
// either would read as a budget never reached.
func TestStatusBudgets(t *testing.T) {
	cfg, _ := queryFixture(t, true)
	f, err := os.OpenFile(cfg, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`budgets:
  - name: team-a
    scope: project:a
    currency: USD
    amount: 100
  - name: team-b
    scope: project:b
    currency: USD
    amount: 100
  - name: team-c
    scope: project:c
    currency: EUR
    amount: 100
`)
	f.Close()
	out, err := execCLI(t, "", "status", "--config", cfg)
	if !isUsageError(err) {
		t.Fatalf("status: %v, want a usage error (exit 2)\n%s", err, out)
	}
	for _, want := range []string{
		"BUDGETS", "team-a  project:a  100 USD",
		`budgets[1].currency (budget "team-b"): project:b never bills in USD; it bills in EUR`,
		`budgets[2].scope (budget "team-c"): project:c has no usage at all`,
	} {
		if !strings.Contains(out+err.Error(), want) {
			t.Errorf("status lacks %q:\n%s\n%v", want, out, err)
		}
	}
	if strings.Contains(err.Error(), "team-a") {
		t.Errorf("team-a bills in USD, yet: %v", err)
	}
}
