package main

import (
	"context"
	"encoding/json"
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
