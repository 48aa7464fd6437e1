package main

import (
	"bytes"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tally-dev/tally"
	"github.com/tally-dev/tally/internal/prooftest"
)

// TestDeliverKilledAtAnyMoment: a real tally run of a deliver step, killed
// with SIGKILL at random moments, the moment a copy's temporary file
// appears in the shared folder, and the moment the mail server has kept a
// mail (before it answers), then run again to its end. Each trial starts
// from the same closed month, not yet delivered (the month's workbook and
// its final). Whatever the kill: the folder ends with exactly the two
// workbooks, byte for byte, and no temporary file; every workbook reached
// the mail server, each copy of one workbook with the same Message-ID;
// and deliveries records each workbook sent once to each target.
func TestDeliverKilledAtAnyMoment(t *testing.T) {
	this := tally.Month.Truncate(time.Now().UTC())
	last := this.AddDate(0, -1, 0)
	s := newCLISim(t, last)
	ms := prooftest.NewMailServer(t)
	share := t.TempDir()
	cfg, _ := cliConfig(t, s, last, `  jobs:
    - name: books
      cron: "@daily"
      run: [fetch, report, close]
    - name: send
      cron: "@daily"
      run: [deliver]
`)
	text, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	deliver := fmt.Sprintf("  months: [previous]\n  close_after: 1h\n  deliver:\n    dir: %s\n    smtp: {host: 127.0.0.1, port: %d, username: tally, password_env: TALLY_KILL_SMTP_PASSWORD, from: tally@example.com, to: [finance@example.com], timeout: 10s}\n", share, ms.Port())
	if err := os.WriteFile(cfg, []byte(strings.Replace(string(text), "  months: [previous]\n", deliver, 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TALLY_KILL_SMTP_PASSWORD", "smtp-kill-S3CRET")
	t.Setenv("SSL_CERT_FILE", ms.CertPEM) // the tally process trusts the test server
	bin := tallyBinary(t)
	prepared := filepath.Dir(cfg)
	if out, err := exec.Command(bin, "run", "--config", cfg, "--job", "books").CombinedOutput(); err != nil {
		t.Fatalf("books: %v\n%s", err, out)
	}
	m := last.Format("2006-01")
	books := []string{"tally-cost-" + m + ".xlsx", "tally-cost-" + m + "-final.xlsx"}
	sorted := slices.Sorted(slices.Values(books))
	want := map[string][]byte{}
	for _, b := range books {
		if want[b], err = os.ReadFile(filepath.Join(prepared, "reports", m, b)); err != nil {
			t.Fatal(err)
		}
	}

	// One whole delivery, to know how long it takes.
	trial := func(i int) (dir, config string) {
		dir = filepath.Join(t.TempDir(), fmt.Sprint("trial", i))
		if out, err := exec.Command("cp", "-a", prepared, dir).CombinedOutput(); err != nil {
			t.Fatalf("copy the prepared folder: %v\n%s", err, out)
		}
		os.RemoveAll(share)
		os.Mkdir(share, 0o750)
		return dir, filepath.Join(dir, "tally.yaml")
	}
	start := func(dir, config string) *exec.Cmd {
		cmd := exec.Command(bin, "run", "--config", config, "--job", "send", "--log-format", "json")
		cmd.Dir = dir
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		return cmd
	}
	dir, config := trial(0)
	began := time.Now()
	if err := start(dir, config).Wait(); err != nil {
		t.Fatal(err)
	}
	full := time.Since(began)

	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 23))
	kills := map[string]int{}
	for i := 1; i <= 15; i++ {
		dir, config := trial(i)
		before := len(ms.Received())
		for len(ms.Kept()) > 0 {
			<-ms.Kept()
		}
		cmd := start(dir, config)
		when := []string{"random", "folder temp", "mail kept"}[i%3]
		switch when {
		case "random":
			time.Sleep(time.Duration(rng.Int64N(int64(full))))
		case "folder temp":
			waitForFile(share, func(name string) bool { return strings.HasSuffix(name, ".tmp") }, 4*full)
		case "mail kept":
			select {
			case <-ms.Kept():
			case <-time.After(4 * full):
			}
		}
		if proofKillNow(t, cmd) {
			kills[when]++
		}
		rerun := exec.Command(bin, "run", "--config", config, "--job", "send")
		rerun.Dir = dir
		if out, err := rerun.CombinedOutput(); err != nil {
			t.Fatalf("trial %d (kill %s): the rerun failed: %v\n%s", i, when, err, out)
		}
		label := fmt.Sprintf("trial %d (kill %s)", i, when)

		entries, _ := os.ReadDir(share)
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		if !slices.Equal(names, sorted) {
			t.Fatalf("%s: the folder holds %v, want %v and nothing else", label, names, books)
		}
		for _, b := range books {
			if got, _ := os.ReadFile(filepath.Join(share, b)); !bytes.Equal(got, want[b]) {
				t.Fatalf("%s: the folder's %s is not the workbook", label, b)
			}
		}
		ids := map[string]string{} // attachment name: Message-ID
		for _, raw := range ms.Received()[before:] {
			m := prooftest.ParseMail(t, raw)
			h, attached, name := m.Header, m.Attached, m.Name
			if !bytes.Equal(attached, want[name]) {
				t.Fatalf("%s: a mail's attachment %q is not the workbook", label, name)
			}
			id := h.Get("Message-Id")
			if prev, ok := ids[name]; ok && prev != id {
				t.Fatalf("%s: %s was mailed twice with Message-IDs %s and %s: mail clients show two messages", label, name, prev, id)
			}
			ids[name] = id
		}
		if len(ids) != len(books) {
			t.Fatalf("%s: mails carried %v, want both workbooks", label, ids)
		}
		prooftest.WithDB(t, filepath.Join(dir, "tally.duckdb"), func(db *sql.DB) {
			var sent, other int
			if err := db.QueryRow(`SELECT count(*) FILTER (WHERE status = 'sent'), count(*) FILTER (WHERE status <> 'sent') FROM deliveries`).Scan(&sent, &other); err != nil {
				t.Fatal(err)
			}
			if sent != 4 || other != 0 {
				t.Fatalf("%s: deliveries %d sent and %d not, want 4 sent: two workbooks to two targets", label, sent, other)
			}
		})
	}
	if kills["random"]+kills["folder temp"]+kills["mail kept"] < 10 {
		t.Fatalf("kills %v: the loop tested too little", kills)
	}
	t.Logf("deliveries killed: %v (a whole delivery takes %s)", kills, full.Round(time.Millisecond))
}
