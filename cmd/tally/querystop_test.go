package main

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tally-dev/tally/job"
	"github.com/tally-dev/tally/store"
)

// TestQueryStopsOnSignal: SIGTERM or SIGINT to tally query ends a query
// that would run for hours within moments, exit 1 (the query failed;
// nothing was written anywhere), with no DuckDB abort.
func TestQueryStopsOnSignal(t *testing.T) {
	bin := tallyBinary(t)
	_, db := queryFixture(t, true)
	pub := store.PublishedPath(db)
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		cmd := exec.Command(bin, "query", "--db", pub, "SELECT sum(hash(i)) FROM range(1000000000000) r(i)")
		cmd.Env = os.Environ()
		var errb bytes.Buffer
		cmd.Stderr = &errb
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(1500 * time.Millisecond) // well into the query
		sent := time.Now()
		cmd.Process.Signal(sig)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			<-done
			t.Fatalf("%s: tally query still ran 30s after the signal", sig)
		}
		took := time.Since(sent)
		t.Logf("%s: tally query ended %s after the signal", sig, took.Round(time.Millisecond))
		if code := cmd.ProcessState.ExitCode(); code != job.ExitFailed {
			t.Errorf("%s: exit %d, want %d\n%s", sig, code, job.ExitFailed, errb.String())
		}
		if !strings.Contains(errb.String(), "context canceled") && !strings.Contains(errb.String(), "Interrupted") {
			t.Errorf("%s: stderr does not say the query was stopped:\n%s", sig, errb.String())
		}
	}
}
