package main

import (
	"bufio"
	"database/sql"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/tally-dev/tally/job"
	"github.com/tally-dev/tally/store"
)

// holdDBEnv makes the test binary a process that opens the DuckDB file
// named in it read-write, as an analyst's duckdb.connect(path) or the
// DuckDB CLI without -readonly does, says so, and holds it until its
// standard input closes.
const holdDBEnv = "TALLY_CLI_TEST_HOLD_DB"

// asTallyEnv makes the test binary run as tally itself (main), so the
// process-level proofs (crash, security) run the real command without a
// separate build.
const asTallyEnv = "TALLY_CLI_TEST_AS_TALLY"

func TestMain(m *testing.M) {
	if os.Getenv(asTallyEnv) == "1" {
		os.Args = append([]string{"tally"}, os.Args[1:]...)
		main()
	}
	if path := os.Getenv(holdDBEnv); path != "" {
		db, err := sql.Open("duckdb", path)
		if err == nil {
			err = db.Ping()
		}
		if err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		fmt.Println("held")
		io.Copy(io.Discard, os.Stdin)
		db.Close()
		os.Exit(0)
	}
	code := m.Run()
	endBinary()
	os.Exit(code)
}

// holdForWriting opens path read-write in another process and returns its
// pid; the process ends with the test.
func holdForWriting(t *testing.T, path string) int {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), holdDBEnv+"="+path)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stdin.Close(); cmd.Wait() })
	line, _ := bufio.NewReader(stdout).ReadString('\n')
	if strings.TrimSpace(line) != "held" {
		t.Fatalf("the holding process said %q", line)
	}
	return cmd.Process.Pid
}

// An analyst holding the published copy for writing blocks none of tally's
// readers: each reads a private copy and says who holds the file and how
// to open it read-only.
func TestReadersAnswerWhileAnAnalystHoldsTheCopy(t *testing.T) {
	cfg, db := queryFixture(t, true)
	pub := store.PublishedPath(db)
	pid := holdForWriting(t, pub)
	if _, err := store.Open(t.Context(), pub, store.ReadOnly()); err == nil || !strings.Contains(err.Error(), "lock") {
		t.Fatalf("the copy opened read-only beside a writer (%v): the test holds no lock", err)
	}
	holder := "pid " + strconv.Itoa(pid)

	var out string
	var err error
	stderr := stderrOf(t, func() {
		out, err = execCLI(t, "", "query", "--config", cfg, "--format", "csv", "SELECT currency, sum(cost) AS cost FROM usage GROUP BY ALL ORDER BY ALL")
	})
	if err != nil || out != "currency,cost\r\nEUR,3.000000000000\r\nUSD,12345678901234.300000000001\r\n" {
		t.Fatalf("tally query: %q, %v", out, err)
	}
	if !strings.Contains(stderr, holder) || !strings.Contains(stderr, "-readonly") || !strings.Contains(stderr, "read_only=True") {
		t.Errorf("tally query said %q; want the holder (%s) and how to open the copy read-only", stderr, holder)
	}
	// --db on the same copy answers the same way (it once failed with
	// "Could not set lock").
	stderr = stderrOf(t, func() {
		out, err = execCLI(t, "", "query", "--db", pub, "--format", "csv", "SELECT currency, sum(cost) AS cost FROM usage GROUP BY ALL ORDER BY ALL")
	})
	if err != nil || out != "currency,cost\r\nEUR,3.000000000000\r\nUSD,12345678901234.300000000001\r\n" {
		t.Fatalf("tally query --db: %q, %v", out, err)
	}
	if !strings.Contains(stderr, holder) || !strings.Contains(stderr, "private copy") {
		t.Errorf("tally query --db said %q; want the holder (%s) and that it reads a private copy", stderr, holder)
	}

	// Tally's live database is not copied (a run writes it in place): a
	// query of it while held says to read the published copy.
	if _, err := os.Stat(store.LockPath(db)); err != nil {
		if err := os.WriteFile(store.LockPath(db), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	holdForWriting(t, db)
	_, err = execCLI(t, "", "query", "--db", db, "SELECT 1")
	if err == nil || !strings.Contains(err.Error(), "query its published copy instead") || !strings.Contains(err.Error(), pub) {
		t.Errorf("tally query --db on the held live database: %v; want it to point at %s", err, pub)
	}

	xlsx := filepath.Join(t.TempDir(), "jan.xlsx")
	stderr = stderrOf(t, func() {
		out, err = execCLI(t, "", "report", "--config", cfg, "--month", "2026-01", "--out", xlsx)
	})
	if err != nil {
		t.Fatalf("tally report: %v", err)
	}
	if fi, err := os.Stat(xlsx); err != nil || fi.Size() == 0 {
		t.Fatalf("workbook: %v", err)
	}
	if !strings.Contains(stderr, holder) {
		t.Errorf("tally report said %q; want the holder (%s)", stderr, holder)
	}

	out, err = execCLI(t, "", "status", "--config", cfg, "--format", "json")
	if err != nil || !strings.Contains(out, `"windows"`) {
		t.Fatalf("tally status: %v\n%s", err, out)
	}

	// Every private copy is gone once its reader closed it.
	if left, _ := filepath.Glob(filepath.Join(filepath.Dir(db), ".tally-reader-*")); len(left) > 0 {
		t.Errorf("private copies left behind: %v", left)
	}
}

// A month with no usage rows gets no workbook: tally report refuses it
// (exit 2, nothing written), naming the month and basis.
func TestReportOfAnEmptyMonth(t *testing.T) {
	cfg, _ := queryFixture(t, true)
	out := filepath.Join(t.TempDir(), "march.xlsx")
	_, code, stderr := cli(t, "report", "--config", cfg, "--month", "2026-03", "--out", out)
	if code != job.ExitRefused || !strings.Contains(stderr, "2026-03") || !strings.Contains(stderr, "basis usage") || !strings.Contains(stderr, "no workbook was written") {
		t.Fatalf("exit %d, stderr %q; want 2 naming the month and basis", code, stderr)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("a workbook was written for an empty month: %v", err)
	}
	// The month with rows is written as before.
	if _, code, stderr := cli(t, "report", "--config", cfg, "--month", "2026-01", "--out", out); code != job.ExitOK {
		t.Fatalf("January: exit %d %s", code, stderr)
	}
}

// tallyBinary is the tally command as a separate process: this test binary,
// which runs main when asTallyEnv is set in its environment. The variable
// is set for the test, so commands started with os.Environ() inherit it.
func tallyBinary(t *testing.T) string {
	t.Helper()
	t.Setenv(asTallyEnv, "1")
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return exe
}
