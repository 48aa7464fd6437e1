package main

import (
	"crypto/sha256"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tally-dev/tally"
	"github.com/tally-dev/tally/internal/prooftest"
	"github.com/tally-dev/tally/job"
	"github.com/tally-dev/tally/reports"
)

// TestCloseKilledAtAnyMoment: a real tally close killed with SIGKILL at
// random moments, and at the moments its files appear (the staged final
// workbook, the final workbook itself), 30 times and more. After every
// kill the month is untouched (no close in force, no final workbook under
// its name) or closed (a close in force whose final workbook, or the
// staged file the next run places, holds exactly the bytes recorded); a
// rerun of tally close then completes it, and leaves no staged or
// temporary file behind. Each trial ends with a reopen, so the next close
// is the month's next in sequence (…-final-2.xlsx, -3 …).
func TestCloseKilledAtAnyMoment(t *testing.T) {
	this := tally.Month.Truncate(time.Now().UTC())
	last := this.AddDate(0, -1, 0)
	s := newCLISim(t, last)
	cfg, db := cliConfig(t, s, last, "")
	dir := filepath.Dir(cfg)
	t.Setenv("USER", "closer")
	bin := tallyBinary(t)
	if _, code, stderr := cli(t, "fetch", "--config", cfg); code != job.ExitOK {
		t.Fatalf("fetch: exit %d\n%s", code, stderr)
	}
	month := last.Format("2006-01")
	monthDir := filepath.Join(dir, "reports", month)
	run := func(args ...string) (*exec.Cmd, error) {
		cmd := exec.Command(bin, append(args, "--config", cfg, "--log-format", "json")...)
		cmd.Env = os.Environ()
		cmd.Dir = dir
		return cmd, cmd.Start()
	}
	closeArgs := []string{"close", "--month", month, "--reason", "signed off"}

	// One whole close, to know how long it takes; then reopen.
	began := time.Now()
	if out, err := exec.Command(bin, append(closeArgs, "--config", cfg)...).CombinedOutput(); err != nil {
		t.Fatalf("close: %v\n%s", err, out)
	}
	full := time.Since(began)
	reopen := func() {
		t.Helper()
		if out, err := exec.Command(bin, "close", "--config", cfg, "--month", month, "--reopen", "--reason", "trial").CombinedOutput(); err != nil {
			t.Fatalf("reopen: %v\n%s", err, out)
		}
	}
	reopen()

	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 21))
	kills := map[string]int{}
	killed := func() int { return kills["random"] + kills["staged"] + kills["final"] }
	// Until 30 closes were killed: a random moment may fall after a
	// close ended.
	trials := 0
	for i := 0; killed() < 30 && i < 45; i++ {
		trials++
		cmd, err := run(closeArgs...)
		if err != nil {
			t.Fatal(err)
		}
		// A third of the kills fall at random in a close's run time, a
		// third the moment the staged final appears, a third the moment
		// the final workbook appears under its name.
		var when string
		switch i % 3 {
		case 0:
			when = "random"
			time.Sleep(time.Duration(rng.Int64N(int64(full))))
		case 1:
			when = "staged"
			waitForFile(monthDir, func(name string) bool { return strings.HasSuffix(name, ".staged") }, full*4)
		case 2:
			when = "final"
			before := finalsIn(monthDir)
			waitForFile(monthDir, func(name string) bool {
				return strings.Contains(name, "-final") && strings.HasSuffix(name, ".xlsx") && !before[name]
			}, full*4)
		}
		if proofKillNow(t, cmd) {
			kills[when]++
		}
		label := fmt.Sprintf("trial %d (kill %s)", i, when)
		closeConsistent(t, db, monthDir, last, label, false)

		// A rerun completes the close: exit 0, or exit 2 "already
		// closed" when the kill came after it was whole.
		out, err := exec.Command(bin, append(closeArgs, "--config", cfg)...).CombinedOutput()
		if err != nil && !strings.Contains(string(out), "is already closed") {
			t.Fatalf("%s: the rerun did not complete the close: %v\n%s", label, err, out)
		}
		closeConsistent(t, db, monthDir, last, label+", rerun", true)
		if t.Failed() {
			t.FailNow()
		}
		reopen()
	}
	if killed() < 30 {
		t.Fatalf("%v: fewer than 30 of %d closes were killed", kills, trials)
	}
	t.Logf("closes killed: %v (a whole close takes %s)", kills, full.Round(time.Millisecond))
}

// proofKillNow kills cmd with SIGKILL and reports whether the signal
// ended it; a process that had already ended on its own must have
// succeeded.
func proofKillNow(t *testing.T, cmd *exec.Cmd) bool {
	t.Helper()
	cmd.Process.Signal(syscall.SIGKILL)
	err := cmd.Wait()
	if err == nil {
		return false
	}
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return true
	}
	t.Fatalf("%s ended with %v before the kill", strings.Join(cmd.Args, " "), err)
	return false
}

// waitForFile polls dir until a name matches, or d passes.
func waitForFile(dir string, match func(string) bool, d time.Duration) {
	for deadline := time.Now().Add(d); time.Now().Before(deadline); {
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			if match(e.Name()) {
				return
			}
		}
		time.Sleep(200 * time.Microsecond)
	}
}

func finalsIn(dir string) map[string]bool {
	out := map[string]bool{}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		out[e.Name()] = true
	}
	return out
}

// closeConsistent checks what a close left: the month untouched (no close
// in force; no final workbook of the next close's name), or closed (the
// close in force names a final workbook whose bytes, in place or staged
// for the next run, are those recorded). With whole, the month must be
// closed with its final in place, and no staged or temporary file left.
func closeConsistent(t *testing.T, db, monthDir string, month time.Time, label string, whole bool) {
	t.Helper()
	var action, final, sha, id string
	var closes int
	prooftest.WithDB(t, db, func(db *sql.DB) {
		err := db.QueryRow(`SELECT action, coalesce(final_workbook, ''), coalesce(final_sha256, ''), CAST(id AS VARCHAR),
       (SELECT count(*) FROM month_closes WHERE action = 'close')
FROM month_closes ORDER BY acted_at DESC, id DESC LIMIT 1`).Scan(&action, &final, &sha, &id, &closes)
		if err != nil {
			t.Fatalf("%s: %v", label, err)
		}
	})
	if action != "close" {
		if whole {
			t.Fatalf("%s: the month is not closed (latest action %s)", label, action)
		}
		next := filepath.Join(monthDir, fmt.Sprintf("tally-cost-%s-final-%d.xlsx", month.Format("2006-01"), closes+1))
		if _, err := os.Stat(next); err == nil {
			t.Fatalf("%s: no close is recorded, yet %s exists", label, filepath.Base(next))
		}
		return
	}
	got, err := fileSum(final)
	if err != nil {
		staged := filepath.Join(filepath.Dir(final), "."+filepath.Base(final)+"."+id+".staged")
		if whole {
			t.Fatalf("%s: the close is recorded but its final workbook is not in place: %v", label, err)
		}
		if got, err = fileSum(staged); err != nil {
			t.Fatalf("%s: the close is recorded, but neither its final workbook nor its staged file is there: %v", label, err)
		}
	}
	if got != sha {
		t.Fatalf("%s: the final workbook's sha256 %s is not the recorded %s", label, got, sha)
	}
	if whole {
		proofCompleteWorkbook(t, final)
		for name := range finalsIn(monthDir) {
			if strings.HasPrefix(name, ".") {
				t.Fatalf("%s: %s is left in the reports folder", label, name)
			}
		}
		if fig, err := readStatus(final); err != nil || !strings.Contains(fig, "by closer") {
			t.Fatalf("%s: the final workbook's month status %q (%v) has no close stamp", label, fig, err)
		}
	}
}

func fileSum(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%x", sha256.Sum256(b)), nil
}

// readStatus is the Summary's month status of the workbook at path.
func readStatus(path string) (string, error) {
	s, err := reports.ReadSummary(path)
	return s.Status, err
}
