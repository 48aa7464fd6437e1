package main

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/tally-dev/tally/internal/prooftest"
	"github.com/tally-dev/tally/job"
)

// TestDeliverDeadMailServerCostsOneBudget: a real tally run of a deliver
// step with three finished months' workbooks due, against a real TCP
// listener that accepts every connection and never greets. The first
// workbook costs the server's three tries (three connections, each ended
// by reports.deliver.smtp.timeout); the other two are not tried again in
// that run, and every workbook is named as not sent, the run partial
// (exit 3). Before, each workbook cost three tries of its own: nine
// connections, minutes at the default timeout.
func TestDeliverDeadMailServerCostsOneBudget(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var accepted atomic.Int64
	var mu sync.Mutex
	var held []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			mu.Lock()
			held = append(held, c) // accepted, never greeted
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range held {
			c.Close()
		}
	})

	start := prooftest.Day(t, "2026-08-01")
	s := newCLISim(t, start)
	cfg, _ := cliConfig(t, s, start, `  jobs:
    - name: send
      cron: "@daily"
      run: [deliver]
`)
	text, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	deliver := fmt.Sprintf("  months: [previous]\n  deliver:\n    smtp: {host: 127.0.0.1, port: %s, username: tally, password_env: TALLY_DEAD_SMTP_PASSWORD, from: tally@example.com, to: [finance@example.com], timeout: 300ms}\n", port)
	if err := os.WriteFile(cfg, []byte(strings.Replace(string(text), "  months: [previous]\n", deliver, 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TALLY_DEAD_SMTP_PASSWORD", "smtp-dead-S3CRET")
	bin := tallyBinary(t)
	tally := func(args ...string) (string, int) {
		cmd := exec.Command(bin, append(args, "--config", cfg)...)
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Fatalf("tally %v: %v", args, err)
		}
		return string(out), cmd.ProcessState.ExitCode()
	}
	if out, code := tally("fetch", "--from", "2026-08-01", "--to", "2026-11-01"); code != job.ExitOK {
		t.Fatalf("fetch: exit %d\n%s", code, out)
	}
	months := []string{"2026-08", "2026-09", "2026-10"}
	for _, m := range months {
		if out, code := tally("report", "--month", m); code != job.ExitOK {
			t.Fatalf("report %s: exit %d\n%s", m, code, out)
		}
	}

	out, code := tally("run", "--job", "send")
	if code != job.ExitPartial {
		t.Fatalf("run: exit %d, want %d (partial)\n%s", code, job.ExitPartial, out)
	}
	for _, m := range months {
		book := "tally-cost-" + m + ".xlsx"
		if !strings.Contains(out, book+" to smtp:127.0.0.1") {
			t.Errorf("the run's error does not list %s as not sent:\n%s", book, out)
		}
	}
	if !strings.Contains(out, "not tried: smtp:127.0.0.1 failed every try earlier in this run") {
		t.Errorf("the run does not say the later workbooks were not tried, and why:\n%s", out)
	}
	if strings.Contains(out, "smtp-dead-S3CRET") {
		t.Fatal("the SMTP password is in the output")
	}
	if n := accepted.Load(); n != 3 {
		t.Fatalf("the dead server accepted %d connections, want 3: one delivery's tries, not three for each of %d workbooks", n, len(months))
	}
}
