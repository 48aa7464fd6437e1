package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/xuri/excelize/v2"

	"github.com/tally-dev/tally/job"
)

// A replay (--as-of) plans, fetches, reports and records as of its own
// day: the plan's windows end the day after it, the lookback counts back
// from it, the nightly run reports the month before it, and the run
// records the day.
func TestAsOfReplaysANight(t *testing.T) {
	start := time.Date(2026, 9, 20, 0, 0, 0, 0, time.UTC)
	asOf := "2026-10-03"
	s := newCLISim(t, start)
	cfg, db := cliConfig(t, s, start, "")

	// Before anything is loaded: a backfill from usage.start to the day
	// after the replayed day, not to the wall clock's tomorrow.
	got := planWindows(t, cfg, "--as-of", asOf)
	if want := []string{"2026-09-20..2026-09-27 backfill", "2026-09-27..2026-10-04 backfill"}; strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("plan --as-of %s before any fetch: %q, want %q", asOf, got, want)
	}

	out, code, stderr := cli(t, "run", "--config", cfg, "--as-of", asOf)
	if code != job.ExitOK {
		t.Fatalf("run --as-of %s: exit %d\nstdout:\n%s\nstderr:\n%s", asOf, code, out, stderr)
	}
	// reports.months [previous] as of 3 October is September.
	if !strings.Contains(out, "report 2026-09: ") || strings.Contains(out, "report 2026-10") {
		t.Errorf("run --as-of %s printed\n%s\nwant the workbook of 2026-09 only", asOf, out)
	}
	if _, err := os.Stat(strings.Replace(db, "tally.duckdb", "reports/2026-09/tally-cost-2026-09.xlsx", 1)); err != nil {
		t.Errorf("the replayed night's workbook: %v", err)
	}

	// The next replay of the same day re-fetches the lookback (1d) back
	// from that day, and the day itself: nothing later.
	got = planWindows(t, cfg, "--as-of", asOf)
	if want := []string{"2026-10-02..2026-10-04 lookback"}; strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("plan --as-of %s after the run: %q, want %q", asOf, got, want)
	}

	// The run records its as-of; status shows it.
	out, code, _ = cli(t, "status", "--config", cfg, "--format", "json")
	var st struct {
		Runs []struct {
			Command string `json:"command"`
			AsOf    string `json:"as_of"`
		} `json:"runs"`
	}
	if err := json.Unmarshal([]byte(out), &st); err != nil || code != job.ExitOK || len(st.Runs) == 0 {
		t.Fatalf("status: exit %d, %v\n%s", code, err, out)
	}
	if st.Runs[0].Command != "run" || !strings.HasPrefix(st.Runs[0].AsOf, asOf) {
		t.Errorf("latest run %+v; want command run with as_of %s", st.Runs[0], asOf)
	}
	out, _, _ = cli(t, "status", "--config", cfg)
	if !strings.Contains(out, "AS OF") || !strings.Contains(out, "  "+asOf+"  ") {
		t.Errorf("status table does not show the run's as-of %s:\n%s", asOf, out)
	}
	if got := scalarText(t, db, "SELECT CAST(as_of AS VARCHAR) FROM runs WHERE command = 'run'"); got != asOf {
		t.Errorf("runs.as_of = %q, want %s", got, asOf)
	}
}

// --as-of and TALLY_AS_OF later than the wall clock, or not a date, are
// refused (exit 2) naming the flag or variable, the value and what is
// allowed, before anything is touched.
func TestAsOfRefusesTheFuture(t *testing.T) {
	setPlanClock(t, time.Date(2026, 10, 5, 10, 0, 0, 0, time.UTC))
	start := time.Date(2026, 9, 20, 0, 0, 0, 0, time.UTC)
	s := newCLISim(t, start)
	cfg, db := cliConfig(t, s, start, "")
	for _, c := range []struct {
		args []string
		env  string
		want []string
	}{
		{[]string{"fetch", "--as-of", "2026-10-06"}, "", []string{`--as-of "2026-10-06" is later than today (2026-10-05 UTC)`, "at most 2026-10-05"}},
		{[]string{"run", "--as-of", "2026-10-06"}, "", []string{`--as-of "2026-10-06"`, "later than today"}},
		{[]string{"status", "--as-of", "2026-10-06"}, "", []string{`--as-of "2026-10-06"`, "later than today"}},
		{[]string{"report", "--month", "2026-09", "--as-of", "2026-10-06"}, "", []string{`--as-of "2026-10-06"`}},
		{[]string{"close", "--month", "2026-09", "--as-of", "2026-10-06"}, "", []string{`--as-of "2026-10-06"`}},
		{[]string{"alerts", "--as-of", "2026-10-06"}, "", []string{`--as-of "2026-10-06"`}},
		{[]string{"plan", "--as-of", "5 Oct"}, "", []string{`--as-of "5 Oct" is not a date`, "YYYY-MM-DD"}},
		{[]string{"fetch"}, "2026-10-06", []string{`TALLY_AS_OF "2026-10-06" is later than today`}},
		{[]string{"plan"}, "yesterday", []string{`TALLY_AS_OF "yesterday" is not a date`}},
	} {
		t.Setenv(asOfEnv, c.env)
		args := append(c.args[:1:1], append([]string{"--config", cfg}, c.args[1:]...)...)
		_, code, stderr := cli(t, args...)
		if code != job.ExitRefused {
			t.Errorf("%v (TALLY_AS_OF=%q): exit %d, want 2\n%s", args, c.env, code, stderr)
		}
		for _, w := range c.want {
			if !strings.Contains(stderr, w) {
				t.Errorf("%v (TALLY_AS_OF=%q): stderr %q does not say %q", args, c.env, stderr, w)
			}
		}
		if _, err := os.Stat(db); !os.IsNotExist(err) {
			t.Fatalf("%v: a refused --as-of touched the database: %v", args, err)
		}
	}
	// Today itself is a day that has come.
	t.Setenv(asOfEnv, "")
	if got := planWindows(t, cfg, "--as-of", "2026-10-05"); len(got) == 0 || !strings.HasSuffix(got[len(got)-1], "..2026-10-06 backfill") {
		t.Errorf("plan --as-of today: %q; want a backfill to 2026-10-06", got)
	}
}

// A replay's budgets are as they stood on the morning of its day, however
// much later data is loaded: with the month fetched through 15 November,
// alerts, status and the workbook's Budgets sheet as of 10 November count
// the usage before 10 November only, through 9 November, complete (as the
// night of 10 November, which fetched that day, saw it), and the month is
// November's. Without --as-of they count every day loaded, the last one
// partial. A close replayed that day writes October's final workbook
// from the replay's connection too.
func TestAsOfBudgetsAreAsOfTheReplayDay(t *testing.T) {
	start := time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC)
	fetched, replay := "2026-11-15", "2026-11-10"
	s := newCLISim(t, start)
	s.now.Store(time.Date(2026, 11, 15, 6, 0, 0, 0, time.UTC).UnixNano()) // the interface's clock: the morning of the fetch
	cfg, db := cliConfig(t, s, start, "budgets:\n  - {name: all-usd, scope: all, currency: USD, amount: 1000000, actual: [], forecast: []}\n")
	if out, code, stderr := cli(t, "fetch", "--config", cfg, "--as-of", fetched); code != job.ExitOK {
		t.Fatalf("fetch --as-of %s: exit %d\n%s\n%s", fetched, code, out, stderr)
	}
	// What the budget's actual is, from the usage rows themselves: the
	// month's usage before a day, in cents as the figures show it.
	usageBetween := func(from, to string) string {
		return scalarText(t, db, `SELECT CAST(round(sum(cost), 2) AS DECIMAL(38, 2)) FROM usage
WHERE basis = 'usage' AND granularity IN ('hour', 'day') AND currency = 'USD'
  AND date >= CAST(DATE '`+from+`' AS TIMESTAMP) AND date < CAST(DATE '`+to+`' AS TIMESTAMP)`)
	}
	usageBefore := func(day string) string { return usageBetween("2026-11-01", day) }
	lastDay := scalarText(t, db, `SELECT max(CAST(date AS DATE)) FROM usage WHERE basis = 'usage' AND currency = 'USD'`)
	if lastDay <= replay {
		t.Fatalf("usage loaded through %s: the test needs days after %s", lastDay, replay)
	}
	for _, c := range []struct {
		asOf, actual, through, head string
	}{
		{replay, usageBefore(replay), "2026-11-09 (complete)", "Data through (complete)"},
		{"", usageBefore("2026-12-01"), lastDay + " (that day partial)", "Data through (last day partial)"},
	} {
		flags := []string{"--config", cfg}
		if c.asOf != "" {
			flags = append(flags, "--as-of", c.asOf)
		}
		out, code, stderr := cli(t, append([]string{"alerts", "--dry-run"}, flags...)...)
		if code != job.ExitOK {
			t.Fatalf("alerts --dry-run %v: exit %d\n%s\n%s", flags, code, out, stderr)
		}
		var line string
		for _, l := range strings.Split(out, "\n") {
			if strings.HasPrefix(l, "all-usd ") {
				line = l
			}
		}
		if f := strings.Fields(line); len(f) < 6 || f[2] != "2026-11" || f[5] != c.actual || !strings.HasSuffix(line, "  "+c.through) {
			t.Errorf("alerts --dry-run %v: budget line %q; want month 2026-11, actual %s, through %s\n%s", flags, line, c.actual, c.through, out)
		}

		out, code, stderr = cli(t, append([]string{"status", "--format", "json"}, flags...)...)
		var st struct {
			Budgets []struct {
				Month       string `json:"month"`
				Actual      string `json:"actual"`
				ThroughText string `json:"through_text"`
			} `json:"budgets"`
		}
		if err := json.Unmarshal([]byte(out), &st); err != nil || code != job.ExitOK {
			t.Fatalf("status %v: exit %d, %v\n%s", flags, code, err, stderr)
		}
		if len(st.Budgets) != 1 || st.Budgets[0].Month != "2026-11" || st.Budgets[0].Actual != c.actual || st.Budgets[0].ThroughText != c.through {
			t.Errorf("status %v budgets %+v; want 2026-11, actual %s, through %s", flags, st.Budgets, c.actual, c.through)
		}

		book := filepath.Join(t.TempDir(), "budgets.xlsx")
		if out, code, stderr := cli(t, append([]string{"report", "--month", "2026-11", "--out", book}, flags...)...); code != job.ExitOK {
			t.Fatalf("report %v: exit %d\n%s\n%s", flags, code, out, stderr)
		}
		f, err := excelize.OpenFile(book)
		if err != nil {
			t.Fatal(err)
		}
		raw, err := f.GetRows("Budgets and forecast", excelize.Options{RawCellValue: true})
		if err != nil {
			t.Fatal(err)
		}
		shown, err := f.GetRows("Budgets and forecast")
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		if len(raw) < 2 || len(raw[1]) < 9 || raw[0][4] != "Actual so far" {
			t.Fatalf("report %v: Budgets sheet %q", flags, raw)
		}
		got, err := strconv.ParseFloat(raw[1][4], 64)
		if err != nil || fmt.Sprintf("%.2f", got) != c.actual {
			t.Errorf("report %v: Budgets sheet actual %q, want %s", flags, raw[1][4], c.actual)
		}
		if day, _, _ := strings.Cut(c.through, " "); shown[1][8] != day || raw[0][8] != c.head {
			t.Errorf("report %v: Budgets sheet through %q (%q), want %s (%s)", flags, shown[1][8], raw[0][8], day, c.head)
		}
	}

	out, code, stderr := cli(t, "close", "--config", cfg, "--month", "2026-10", "--reason", "replayed", "--as-of", replay)
	if code != job.ExitOK {
		t.Fatalf("close --as-of %s: exit %d\n%s\n%s", replay, code, out, stderr)
	}
	rows := sheetRows(t, filepath.Join(filepath.Dir(cfg), "reports", "2026-10", "tally-cost-2026-10-final.xlsx"), "Budgets and forecast")
	if want := usageBetween("2026-10-01", "2026-11-01"); len(rows) < 2 || len(rows[1]) < 5 || rows[0][4] != "Actual" || !strings.HasPrefix(strings.ReplaceAll(rows[1][4], ",", ""), want+" ") {
		t.Errorf("close --as-of %s: October's Budgets sheet %q, want its actual %s", replay, rows, want)
	}
}
