package main

import (
	"bytes"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
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
	"github.com/tally-dev/tally/internal/testkit/prooftest"
)

// TestDeliverKilledAtAnyMoment: a real tally run of a deliver step, killed
// with SIGKILL at random moments, the moment a copy's temporary file
// appears in the shared folder, and the moment the mail server has kept a
// mail (before it answers), then run again to its end. Each trial starts
// from the same closed month, not yet delivered (the month's workbook and
// its final). The rerun is a job that writes the month's workbook again
// before it delivers, as the nightly job does: the rebuilt workbook has
// other bytes (another generation time) than the one the killed run may
// have handed the mail server. Whatever the kill: the folder ends with
// exactly the two workbooks, each as deliveries records it, and no
// temporary file; every workbook reached the mail server; one Message-ID
// never carries two different attachments (a receiver that keeps the
// first copy of a Message-ID keeps what deliveries records under it), the
// same bytes always carry the same Message-ID; and deliveries records each
// workbook sent once to each target, under a Message-ID the server
// received with those very bytes.
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
    - name: again
      cron: "@daily"
      run: [report, deliver]
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
		rerun := exec.Command(bin, "run", "--config", config, "--job", "again")
		rerun.Dir = dir
		if out, err := rerun.CombinedOutput(); err != nil {
			t.Fatalf("trial %d (kill %s): the rerun failed: %v\n%s", i, when, err, out)
		}
		label := fmt.Sprintf("trial %d (kill %s)", i, when)
		// The month's workbook as the rerun wrote it again: other bytes
		// than the prepared one, or the trial tests no rebuild.
		rebuilt, err := os.ReadFile(filepath.Join(dir, "reports", m, books[0]))
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Equal(rebuilt, want[books[0]]) {
			t.Fatalf("%s: the rerun's report wrote the month's workbook byte for byte as before: nothing was rebuilt", label)
		}
		versions := map[string][][]byte{books[0]: {want[books[0]], rebuilt}, books[1]: {want[books[1]]}}
		isVersion := func(name string, b []byte) bool {
			return slices.ContainsFunc(versions[name], func(v []byte) bool { return bytes.Equal(v, b) })
		}

		entries, _ := os.ReadDir(share)
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		if !slices.Equal(names, sorted) {
			t.Fatalf("%s: the folder holds %v, want %v and nothing else", label, names, books)
		}
		inFolder := map[string]string{} // workbook: sha256 of the folder's copy
		for _, b := range books {
			got, _ := os.ReadFile(filepath.Join(share, b))
			if !isVersion(b, got) {
				t.Fatalf("%s: the folder's %s is not the workbook", label, b)
			}
			inFolder[b] = sha256Of(got)
		}
		bodies := map[string]string{} // Message-ID: sha256 of its attachment
		idOf := map[string]string{}   // sha256 of an attachment: its Message-ID
		names = names[:0]
		for _, raw := range ms.Received()[before:] {
			m := prooftest.ParseMail(t, raw)
			h, attached, name := m.Header, m.Attached, m.Name
			if !isVersion(name, attached) {
				t.Fatalf("%s: a mail's attachment %q is not the workbook", label, name)
			}
			id, sum := h.Get("Message-Id"), sha256Of(attached)
			if prev, ok := bodies[id]; ok && prev != sum {
				t.Fatalf("%s: Message-ID %s carried two different attachments %s (sha256 %s and %s): a receiver that keeps the first keeps bytes deliveries does not record", label, id, name, prev[:12], sum[:12])
			}
			if prev, ok := idOf[sum]; ok && prev != id {
				t.Fatalf("%s: %s was mailed twice, the same bytes with Message-IDs %s and %s: mail clients show two messages", label, name, prev, id)
			}
			bodies[id], idOf[sum] = sum, id
			if !slices.Contains(names, name) {
				names = append(names, name)
			}
		}
		if slices.Sort(names); !slices.Equal(names, sorted) {
			t.Fatalf("%s: mails carried %v, want both workbooks", label, names)
		}
		prooftest.WithDB(t, filepath.Join(dir, "tally.duckdb"), func(db *sql.DB) {
			var sent, other int
			if err := db.QueryRow(`SELECT count(*) FILTER (WHERE status = 'sent'), count(*) FILTER (WHERE status <> 'sent') FROM deliveries`).Scan(&sent, &other); err != nil {
				t.Fatal(err)
			}
			if sent != 4 || other != 0 {
				t.Fatalf("%s: deliveries %d sent and %d not, want 4 sent: two workbooks to two targets", label, sent, other)
			}
			rows, err := db.Query(`SELECT target, path, sha256, coalesce(message_id, '') FROM deliveries`)
			if err != nil {
				t.Fatal(err)
			}
			defer rows.Close()
			for rows.Next() {
				var target, path, sum, id string
				if err := rows.Scan(&target, &path, &sum, &id); err != nil {
					t.Fatal(err)
				}
				book := filepath.Base(path)
				switch {
				case strings.HasPrefix(target, "dir:") && inFolder[book] != sum:
					t.Fatalf("%s: deliveries records %s copied with sha256 %s, the folder holds %s", label, book, sum[:12], inFolder[book][:12])
				case strings.HasPrefix(target, "smtp:") && bodies[id] != sum:
					t.Fatalf("%s: deliveries records %s mailed as %s with sha256 %s; the server received %q under it", label, book, id, sum[:12], bodies[id])
				}
			}
			if err := rows.Err(); err != nil {
				t.Fatal(err)
			}
		})
	}
	if kills["random"]+kills["folder temp"]+kills["mail kept"] < 10 {
		t.Fatalf("kills %v: the loop tested too little", kills)
	}
	t.Logf("deliveries killed: %v (a whole delivery takes %s)", kills, full.Round(time.Millisecond))
}

func sha256Of(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
