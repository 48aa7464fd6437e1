package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/tally-dev/tally"
	"github.com/tally-dev/tally/job"
)

// TestCloseCommand: tally close refuses with exit 2, saying why, a month
// that is not over, one with days not loaded, one already closed (naming
// when and by whom) and a reopen without a reason; it closes last month,
// writing its final workbook, and reopens it with a reason.
func TestCloseCommand(t *testing.T) {
	this := tally.Month.Truncate(time.Now().UTC())
	last, before := this.AddDate(0, -1, 0), this.AddDate(0, -2, 0)
	s := newCLISim(t, last)
	cfg, _ := cliConfig(t, s, last, "")
	t.Setenv("USER", "closer")
	m := func(t time.Time) string { return t.Format("2006-01") }

	refused := func(want []string, args ...string) {
		t.Helper()
		_, code, stderr := cli(t, append([]string{"close", "--config", cfg}, args...)...)
		if code != job.ExitRefused {
			t.Fatalf("tally close %v: exit %d, want %d\n%s", args, code, job.ExitRefused, stderr)
		}
		for _, w := range want {
			if !strings.Contains(stderr, w) {
				t.Errorf("tally close %v: stderr does not say %q:\n%s", args, w, stderr)
			}
		}
	}
	refused([]string{"--month " + m(this) + " is not over", this.AddDate(0, 1, 0).Format(time.DateOnly)}, "--month", m(this))
	refused([]string{`--month: month "2026-13" is not a YYYY-MM calendar month`}, "--month", "2026-13")
	refused([]string{"--month is required"})
	refused([]string{"not fully loaded", "granularity day, basis usage", "tally fetch --from " + m(last) + "-01"}, "--month", m(last))
	if out, code, stderr := cli(t, "fetch", "--config", cfg); code != job.ExitOK {
		t.Fatalf("fetch: exit %d\n%s\n%s", code, out, stderr)
	}
	refused([]string{"--month " + m(before) + " is not fully loaded", "tally fetch --from " + m(before) + "-01 --to " + m(last) + "-01"}, "--month", m(before))

	out, code, stderr := cli(t, "close", "--config", cfg, "--month", m(last), "--reason", "signed off")
	if code != job.ExitOK {
		t.Fatalf("close: exit %d\n%s\n%s", code, out, stderr)
	}
	final := filepath.Join(filepath.Dir(cfg), "reports", m(last), "tally-cost-"+m(last)+"-final.xlsx")
	if !strings.Contains(out, "closed "+m(last)) || !strings.Contains(out, final) || !strings.Contains(out, "by closer") {
		t.Errorf("close output does not say what it did:\n%s", out)
	}
	if _, err := os.Stat(final); err != nil {
		t.Fatal(err)
	}
	refused([]string{"--month " + m(last) + " is already closed", "by closer", "--reopen"}, "--month", m(last))

	// No report writes over what a close wrote: not by its name, not
	// through another name for the same file.
	signed, err := os.ReadFile(final)
	if err != nil {
		t.Fatal(err)
	}
	alias := filepath.Join(t.TempDir(), "october.xlsx")
	if err := os.Symlink(final, alias); err != nil {
		t.Fatal(err)
	}
	for _, out := range []string{final, alias, filepath.Join(t.TempDir(), "tally-cost-2020-01-final-3.xlsx")} {
		_, code, stderr := cli(t, "report", "--config", cfg, "--month", m(last), "--out", out)
		if code != job.ExitRefused || !strings.Contains(stderr, "final workbook") {
			t.Errorf("report --out %s: exit %d, want %d refusing to write over a final workbook\n%s", out, code, job.ExitRefused, stderr)
		}
	}
	if now, err := os.ReadFile(final); err != nil || !bytes.Equal(now, signed) {
		t.Fatalf("the final workbook changed under tally report --out (%v)", err)
	}
	status, code, stderr := cli(t, "status", "--config", cfg)
	if code != job.ExitOK || !regexpMatch(`(?m)^`+m(last)+`\s+usage\s+day\s+\S+Z\s+closer\s+`+regexp.QuoteMeta(final)+`\s+in place$`, status) {
		t.Fatalf("status does not show the close and its final workbook: exit %d\n%s\n%s", code, status, stderr)
	}
	refused([]string{"--reason is required with --reopen"}, "--month", m(last), "--reopen")
	out, code, stderr = cli(t, "close", "--config", cfg, "--month", m(last), "--reopen", "--reason", "credit note")
	if code != job.ExitOK || !strings.Contains(out, "reopened "+m(last)) {
		t.Fatalf("reopen: exit %d\n%s\n%s", code, out, stderr)
	}
	out, code, stderr = cli(t, "query", "--config", cfg, "--format", "csv", "SELECT action, who, reason FROM month_closes ORDER BY acted_at")
	if code != job.ExitOK || strings.ReplaceAll(out, "\r\n", "\n") != "action,who,reason\nclose,closer,signed off\nreopen,closer,credit note\n" {
		t.Fatalf("month_closes in the analysts' copy: exit %d\n%s\n%s", code, out, stderr)
	}
}
