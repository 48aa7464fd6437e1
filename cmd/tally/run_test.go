package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/xuri/excelize/v2"

	"github.com/tally-dev/tally"
	"github.com/tally-dev/tally/job"
	"github.com/tally-dev/tally/reports"
)

// TestRunExitCodes runs `tally run` with one window failing every retry:
// exit 3, and the previous month's workbook is still written and names the
// run; the next run, with the fault gone, exits 0.
func TestRunExitCodes(t *testing.T) {
	now := time.Now().UTC()
	previous := tally.Month.Truncate(now).AddDate(0, -1, 0)
	s := newCLISim(t, previous)
	cfg, db := cliConfig(t, s, previous, "")
	workbook := reports.DefaultPath(filepath.Join(filepath.Dir(db), "reports"), previous)

	s.failDay.Store(previous.AddDate(0, 0, 14).Format(tally.DateLayout))
	out, code, stderr := cli(t, "run", "--config", cfg, "--log-format", "json")
	if code != job.ExitPartial || !strings.Contains(out, "1 failed") {
		t.Fatalf("run with a failing window: exit %d, want 3\nstdout:\n%s\nstderr:\n%s", code, out, stderr)
	}
	if !strings.Contains(out, "report "+previous.Format("2006-01")+": "+workbook) {
		t.Fatalf("run does not print the workbook %s:\n%s", workbook, out)
	}
	f, err := excelize.OpenFile(workbook)
	if err != nil {
		t.Fatal(err)
	}
	summary, err := f.GetRows("Summary")
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	runID := ""
	for _, r := range summary {
		if len(r) > 1 && r[0] == "Last run id" {
			runID = r[1]
		}
	}
	ids, code, _ := cli(t, "query", "--config", cfg, "--format", "csv", "SELECT id, status FROM runs")
	if want := "id,status\r\n" + runID + ",partial\r\n"; code != job.ExitOK || runID == "" || ids != want {
		t.Errorf("runs %q (exit %d); the workbook names run %q", ids, code, runID)
	}

	s.failDay.Store("")
	if err := os.Remove(workbook); err != nil {
		t.Fatal(err)
	}
	out, code, stderr = cli(t, "run", "--config", cfg)
	if code != job.ExitOK || !strings.Contains(out, "0 failed") {
		t.Fatalf("repairing run: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, stderr)
	}
	if _, err := os.Stat(workbook); err != nil {
		t.Errorf("repairing run wrote no workbook: %v", err)
	}
	got, code, _ := cli(t, "query", "--config", cfg, "--format", "csv", "SELECT status FROM runs ORDER BY started")
	if want := "status\r\npartial\r\nok\r\n"; code != job.ExitOK || got != want {
		t.Errorf("runs: %q (exit %d), want %q", got, code, want)
	}
	// The config names no job: its one job is the default nightly, which
	// these runs were, and tally status says when it last ran.
	got, code, _ = cli(t, "query", "--config", cfg, "--format", "csv", "SELECT DISTINCT job FROM runs")
	if want := "job\r\nnightly\r\n"; code != job.ExitOK || got != want {
		t.Errorf("runs' job: %q (exit %d), want %q", got, code, want)
	}
	last, _, _ := cli(t, "query", "--config", cfg, "--format", "csv", "SELECT id FROM runs ORDER BY started DESC LIMIT 1")
	last = strings.TrimSpace(strings.TrimPrefix(last, "id\r\n"))
	status, code, _ := cli(t, "status", "--config", cfg)
	var nightly string
	for _, line := range strings.Split(status, "\n") {
		if strings.HasPrefix(line, "nightly ") {
			nightly = line
		}
	}
	if code != job.ExitOK || last == "" || !regexp.MustCompile(regexp.QuoteMeta(last)+`\s+ok\s`).MatchString(nightly) {
		t.Errorf("tally status shows the nightly job as %q (exit %d), want its last run %s, ok:\n%s", nightly, code, last, status)
	}
}

// TestRunWithoutJobRunsTheOnlyJob: tally run with no --job runs the one job
// schedule.jobs names, every step of it (here its close and deliver steps
// too), and refuses (exit 2, naming them) when there are several, rather
// than silently run fetch and report alone.
func TestRunWithoutJobRunsTheOnlyJob(t *testing.T) {
	now := time.Now().UTC()
	previous := tally.Month.Truncate(now).AddDate(0, -1, 0)
	s := newCLISim(t, previous)
	share := t.TempDir()
	one := `  jobs:
    - name: books
      cron: "@daily"
      run: [fetch, report, deliver]
`
	cfg, _ := cliConfig(t, s, previous, one)
	text, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	text = []byte(strings.Replace(string(text), "  months: [previous]\n", "  months: [previous]\n  deliver:\n    dir: "+share+"\n", 1))
	if err := os.WriteFile(cfg, text, 0o600); err != nil {
		t.Fatal(err)
	}
	out, code, stderr := cli(t, "run", "--config", cfg)
	if code != job.ExitOK || !strings.Contains(out, "job books ok") {
		t.Fatalf("run: exit %d, want the job books run\nstdout:\n%s\nstderr:\n%s", code, out, stderr)
	}
	name := "tally-cost-" + previous.Format("2006-01") + ".xlsx"
	if _, err := os.Stat(filepath.Join(share, name)); err != nil {
		t.Fatalf("the job's deliver step did not run: %v", err)
	}

	two := strings.Replace(string(text), "      run: [fetch, report, deliver]\n", "      run: [fetch, report, deliver]\n    - name: hourly\n      cron: \"@hourly\"\n      run: [fetch]\n", 1)
	if err := os.WriteFile(cfg, []byte(two), 0o600); err != nil {
		t.Fatal(err)
	}
	_, code, stderr = cli(t, "run", "--config", cfg)
	if code != job.ExitRefused || !strings.Contains(stderr, "--job is required") || !strings.Contains(stderr, "books, hourly") {
		t.Fatalf("run with two jobs: exit %d, want %d naming both jobs\n%s", code, job.ExitRefused, stderr)
	}
}
