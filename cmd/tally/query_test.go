package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/tally-dev/tally"
	"github.com/tally-dev/tally/job"
	"github.com/tally-dev/tally/store"
)

// execCLI runs the command line in-process, as run does, with stdin as
// its input, and returns what it printed.
func execCLI(t *testing.T, stdin string, args ...string) (string, error) {
	t.Helper()
	return runCLI(stdin, args...)
}

// runCLI is execCLI for a fixture made outside any one test.
func runCLI(stdin string, args ...string) (string, error) {
	var out bytes.Buffer
	err := execute(context.Background(), func(root *cobra.Command) {
		root.SetIn(strings.NewReader(stdin))
		root.SetOut(&out)
		root.SetErr(io.Discard)
		root.SetArgs(sqlArgsLast(root, args))
	})
	return out.String(), err
}

func isUsageError(err error) bool {
	var ue usageError
	return errors.As(err, &ue)
}

// queryFixture is a config whose database holds two days of usage, and,
// when publish is set, its published copy: a copy, in a folder of the
// test's own, of the files makeQueryFixture left.
func queryFixture(t *testing.T, publish bool) (cfgPath, dbPath string) {
	t.Helper()
	dir := placeFixture(t, queryFixtures[publish])
	return filepath.Join(dir, "tally.yaml"), filepath.Join(dir, "tally.duckdb")
}

var queryFixtures = map[bool]func() (fixture, error){
	false: onceFixture(func(dir string) error { return makeQueryFixture(dir, false) }),
	true:  onceFixture(func(dir string) error { return makeQueryFixture(dir, true) }),
}

func makeQueryFixture(dir string, publish bool) error {
	ctx := context.Background()
	dbPath := filepath.Join(dir, "tally.duckdb")
	if err := os.WriteFile(filepath.Join(dir, "tally.yaml"), []byte("usage:\n  start: 2026-01-01\nstore:\n  path: tally.duckdb\n"), 0o600); err != nil {
		return err
	}
	s, err := store.Open(ctx, dbPath)
	if err != nil {
		return err
	}
	defer s.Close()
	run := store.NewRunID()
	if err := s.BeginRun(ctx, run, "fetch", "nightly"); err != nil {
		return err
	}
	d := time.Date(2026, 1, 30, 0, 0, 0, 0, time.UTC)
	rows := []tally.MeterData{
		{Date: d, MeterName: "enc", Quantity: 1.5, Cost: tally.MustDecimal("0.100000000001"), Currency: "USD", Project: "a"},
		{Date: d.AddDate(0, 0, 1), MeterName: "enc", Quantity: 2, Cost: tally.MustDecimal("12345678901234.2"), Currency: "USD", Project: "a"},
		{Date: d.AddDate(0, 0, 2), MeterName: "egress", Quantity: 3, Cost: tally.MustDecimal("3"), Currency: "EUR", Project: "b"},
	}
	q := tally.UsageQuery{Window: tally.Window{Start: d, End: d.AddDate(0, 0, 3), Granularity: tally.Day}}
	if _, err := s.LoadWindow(ctx, q, run, func(yield func(tally.MeterData, error) bool) {
		for _, r := range rows {
			if !yield(r, nil) {
				return
			}
		}
	}); err != nil {
		return err
	}
	if err := s.FinishRun(ctx, run, store.RunResult{Status: store.RunOK, Rows: 3, Windows: 1}); err != nil {
		return err
	}
	if publish {
		if _, err := s.Publish(ctx); err != nil {
			return err
		}
	}
	return s.Close()
}

func TestQueryReadsThePublishedCopy(t *testing.T) {
	cfg, db := queryFixture(t, true)

	out, err := execCLI(t, "", "query", "--config", cfg, "--format", "csv",
		"SELECT project, currency, sum(cost) AS cost FROM usage GROUP BY ALL ORDER BY ALL")
	if err != nil {
		t.Fatal(err)
	}
	want := "project,currency,cost\r\na,USD,12345678901234.300000000001\r\nb,EUR,3.000000000000\r\n"
	if out != want {
		t.Fatalf("csv:\n%q\nwant\n%q", out, want)
	}

	out, err = execCLI(t, "", "query", "--config", cfg, "--name", "cost_by_project_month", "--format", "json")
	if err != nil {
		t.Fatal(err)
	}
	var months []map[string]any
	if err := json.Unmarshal([]byte(out), &months); err != nil {
		t.Fatalf("json %q: %v", out, err)
	}
	got := ""
	for _, m := range months {
		got += fmt.Sprintf("%v %v %v %v|", m["month"], m["project"], m["currency"], m["cost"])
	}
	if want := "2026-01-01 a USD 12345678901234.300000000001|2026-02-01 b EUR 3.000000000000|"; got != want {
		t.Fatalf("cost_by_project_month: %s, want %s", got, want)
	}

	sqlFile := filepath.Join(t.TempDir(), "q.sql")
	os.WriteFile(sqlFile, []byte("-- how many rows\nSELECT count(*) AS n FROM usage;\n"), 0o600)
	for _, args := range [][]string{
		{"query", "--config", cfg, "-f", sqlFile},
		{"query", "--db", db, "-f", "-"},
	} {
		out, err = execCLI(t, "SELECT count(*) AS n FROM usage", args...)
		if err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		if want := "n\n-\n3\n(1 row)\n"; out != want {
			t.Fatalf("%v printed %q, want %q", args, out, want)
		}
	}

	// SQL given as the argument may begin with a comment too, wherever it
	// stands among the flags, and after a "--" of the user's own.
	commented := "-- how many rows\nSELECT count(*) AS n FROM usage"
	for _, args := range [][]string{
		{"query", "--config", cfg, commented},
		{"query", commented, "--db", db},
		{"query", "--db", db, "--", commented},
		{"query", "--db=" + db, "--format", "table", "--  rows\tloaded\nSELECT count(*) AS n FROM usage"},
	} {
		out, err = execCLI(t, "", args...)
		if err != nil {
			t.Fatalf("%q: %v", args, err)
		}
		if want := "n\n-\n3\n(1 row)\n"; out != want {
			t.Fatalf("%q printed %q, want %q", args, out, want)
		}
	}
}

// Only an argument that cannot be a flag moves: a flag's value that begins
// with "--" (a close's reason) stays that flag's, and bool flags take no
// value, so the argument after one is still looked at.
func TestSQLArgsLast(t *testing.T) {
	var started bool
	root := newRootCmd(&started)
	for _, c := range []struct{ in, want []string }{
		{[]string{"close", "--config", "c.yaml", "--reason", "-- late charge", "--month", "2026-10"},
			[]string{"close", "--config", "c.yaml", "--reason", "-- late charge", "--month", "2026-10"}},
		{[]string{"alerts", "--dry-run", "--config", "c.yaml"}, []string{"alerts", "--dry-run", "--config", "c.yaml"}},
		{[]string{"query", "--db", "x.duckdb", "-- c\nSELECT 1", "--format", "csv"},
			[]string{"query", "--db", "x.duckdb", "--format", "csv", "--", "-- c\nSELECT 1"}},
		{[]string{"--log-level", "debug", "query", "-- c\nSELECT 1"},
			[]string{"--log-level", "debug", "query", "--", "-- c\nSELECT 1"}},
		{[]string{"query", "--bogus"}, []string{"query", "--bogus"}},
	} {
		if got := sqlArgsLast(root, c.in); !slices.Equal(got, c.want) {
			t.Errorf("sqlArgsLast(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestQueryNeverChangesData(t *testing.T) {
	cfg, _ := queryFixture(t, true)
	for _, sql := range []string{"DELETE FROM usage", "DROP TABLE usage"} {
		_, err := execCLI(t, "", "query", "--config", cfg, sql)
		if err == nil || isUsageError(err) || exitCode(err) != job.ExitFailed {
			t.Fatalf("%s: %v, want a failure (exit 1)", sql, err)
		}
		if !strings.Contains(err.Error(), "read-only") || !strings.Contains(err.Error(), "tally query only reads") {
			t.Fatalf("%s: unclear message %q", sql, err)
		}
	}
	// Beyond the database (another file, a setting): refused by the
	// sandbox, and said so, told apart by the error's kind, not its words.
	for _, sql := range []string{"SELECT * FROM read_csv('/etc/hostname')", "SET enable_external_access = true"} {
		_, err := execCLI(t, "", "query", "--config", cfg, sql)
		if err == nil || exitCode(err) != job.ExitFailed || !strings.Contains(err.Error(), "tally query reads the database only") {
			t.Fatalf("%s: %v, want the sandbox's refusal with its hint (exit 1)", sql, err)
		}
	}
	out, err := execCLI(t, "", "query", "--config", cfg, "--format", "csv", "SELECT count(*) AS n FROM usage")
	if err != nil || out != "n\r\n3\r\n" {
		t.Fatalf("after refused writes: %q %v", out, err)
	}

	_, err = execCLI(t, "", "query", "--config", cfg, "SELECT no_such_column FROM usage")
	if err == nil || isUsageError(err) || !strings.Contains(err.Error(), "no_such_column") {
		t.Fatalf("SQL error: %v, want DuckDB's message, exit 1", err)
	}
}

func TestQueryWithoutAPublishedCopy(t *testing.T) {
	cfg, _ := queryFixture(t, false)
	_, err := execCLI(t, "", "query", "--config", cfg, "SELECT 1")
	if err == nil || !strings.Contains(err.Error(), "no published copy") || !strings.Contains(err.Error(), "tally fetch --config") {
		t.Fatalf("got %v, want a message that tally fetch creates the copy", err)
	}
	if code := exitCode(err); code != job.ExitRefused {
		t.Errorf("query before any fetch: exit %d, want %d (refused, nothing touched)", code, job.ExitRefused)
	}
}

func TestQueryListsNamedQueries(t *testing.T) {
	for _, args := range [][]string{{"query"}, {"query", "--name", ""}} {
		out, err := execCLI(t, "", args...)
		if err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		for _, want := range []string{"cost_by_project_month", "what each project cost per calendar month", "gaps", "payment_methods", "view"} {
			if !strings.Contains(out, want) {
				t.Fatalf("%v: listing lacks %q:\n%s", args, want, out)
			}
		}
	}
	out, err := execCLI(t, "", "query", "--format", "json")
	if err != nil {
		t.Fatal(err)
	}
	var list []map[string]string
	if err := json.Unmarshal([]byte(out), &list); err != nil || len(list) < 8 || list[0]["kind"] != "query" {
		t.Fatalf("json listing %q: %v", out, err)
	}
}

func TestQueryUsageErrors(t *testing.T) {
	cfg, db := queryFixture(t, true)
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	os.WriteFile(bad, []byte("store:\n  pth: x\n"), 0o600)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"query", "--config", cfg, "--name", "gaps", "SELECT 1"}, "exactly one of"},
		{[]string{"query", "--config", cfg, "-f", "x.sql", "SELECT 1"}, "exactly one of"},
		{[]string{"query", "--config", cfg, "SELECT", "1"}, "one quoted argument"},
		{[]string{"query", "--config", cfg, "--format", "xml", "SELECT 1"}, `"xml"`},
		{[]string{"query", "--config", cfg, "--csv-raw", "SELECT 1"}, "--csv-raw applies to --format csv, not table"},
		{[]string{"query", "--config", cfg, "--db", db, "SELECT 1"}, "not both"},
		{[]string{"query", "SELECT 1"}, "--config or --db is required"},
		{[]string{"query", "--config", cfg, "--name", "nope"}, `no named query "nope"`},
		{[]string{"query", "--config", cfg, "-f", "/no/such.sql"}, "/no/such.sql"},
		{[]string{"query", "--db", "/no/such.duckdb", "SELECT 1"}, "/no/such.duckdb"},
		{[]string{"query", "--config", bad, "SELECT 1"}, "pth"},
		{[]string{"query", "--config", cfg, "--bogus", "SELECT 1"}, "bogus"},
	} {
		_, err := execCLI(t, "", tc.args...)
		if !isUsageError(err) || exitCode(err) != job.ExitRefused {
			t.Errorf("%v: %v, want a usage error (exit 2)", tc.args, err)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %q does not mention %q", tc.args, err, tc.want)
		}
	}
}
