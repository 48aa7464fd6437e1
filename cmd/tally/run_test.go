package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/xuri/excelize/v2"

	"github.com/tally-dev/tally"
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
	if code != exitPartial || !strings.Contains(out, "1 failed") {
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
	if want := "id,status\r\n" + runID + ",partial\r\n"; code != exitOK || runID == "" || ids != want {
		t.Errorf("runs %q (exit %d); the workbook names run %q", ids, code, runID)
	}

	s.failDay.Store("")
	if err := os.Remove(workbook); err != nil {
		t.Fatal(err)
	}
	out, code, stderr = cli(t, "run", "--config", cfg)
	if code != exitOK || !strings.Contains(out, "0 failed") {
		t.Fatalf("repairing run: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, stderr)
	}
	if _, err := os.Stat(workbook); err != nil {
		t.Errorf("repairing run wrote no workbook: %v", err)
	}
	got, code, _ := cli(t, "query", "--config", cfg, "--format", "csv", "SELECT status FROM runs ORDER BY started")
	if want := "status\r\npartial\r\nok\r\n"; code != exitOK || got != want {
		t.Errorf("runs: %q (exit %d), want %q", got, code, want)
	}
}
