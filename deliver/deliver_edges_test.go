package deliver_test

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tally-dev/tally/closes"
	"github.com/tally-dev/tally/configs"
	"github.com/tally-dev/tally/deliver"
	"github.com/tally-dev/tally/internal/atomicfile"
	"github.com/tally-dev/tally/internal/testkit/prooftest"
	"github.com/tally-dev/tally/internal/testkit/runtest"
	"github.com/tally-dev/tally/job"
	"github.com/tally-dev/tally/reports"
)

// deliverHarness is a harness whose October is over, delivering to a
// shared folder and, when ms is given, by mail.
func deliverHarness(t *testing.T, ms *prooftest.MailServer, timeout time.Duration) (*runtest.Harness, string, configs.Job) {
	t.Helper()
	t.Setenv("TALLY_TEST_SMTP_PASSWORD", "smtp-S3CRET-7c1e")
	oldPause, oldRoots := deliver.Pause, deliver.RootCAs
	t.Cleanup(func() { deliver.Pause, deliver.RootCAs = oldPause, oldRoots })
	deliver.Pause = time.Millisecond
	h := runtest.NewHarness(t, runtest.Setup{Granularity: "day", Start: "2026-10-01", Now: "2026-11-03T03:00:00Z", Months: []string{"previous"}})
	share := filepath.Join(t.TempDir(), "finance")
	if err := os.Mkdir(share, 0o750); err != nil {
		t.Fatal(err)
	}
	h.Runner.Config.Reports.Deliver = configs.DeliverConfig{Dir: share}
	if ms != nil {
		deliver.RootCAs = ms.Pool
		h.Runner.Config.Reports.Deliver.SMTP = runtest.SMTPConfig(t, ms.Addr, timeout)
	}
	return h, share, configs.Job{Name: "nightly", Cron: "@daily", Run: []string{"fetch", "report", "deliver"}}
}

// A close after a reopen writes a new final workbook, and delivery is
// keyed by content, so the new final goes to the folder and by mail while
// the superseded one is never sent again; the mail's figures are the
// attached workbook's own Summary, and its Message-ID is derived from the
// attachment's bytes.
func TestDeliverReclosedFinalAndMailMatchesAttachment(t *testing.T) {
	ms := newMailServer(t)
	h, share, nightly := deliverHarness(t, ms, 10*time.Second)
	ctx := context.Background()
	oct := prooftest.Day(t, "2026-10-01")
	if _, err := h.Runner.RunJob(ctx, "run", nightly); err != nil {
		t.Fatalf("run 1: %v", err)
	}
	if n := len(ms.Received()); n != 1 {
		t.Fatalf("%d mails after the month ended, want the month's workbook", n)
	}
	if _, err := closes.Close(ctx, h.Runner, h.Runner.Config, closes.CloseOptions{Month: oct, Who: "alice", Reason: "signed off"}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Runner.RunJob(ctx, "run", nightly); err != nil {
		t.Fatalf("run 2: %v", err)
	}
	h.Clock.Set(time.Date(2026, 11, 3, 5, 0, 0, 0, time.UTC))
	if _, err := closes.Close(ctx, h.Runner, h.Runner.Config, closes.CloseOptions{Month: oct, Who: "bob", Reopen: true, Reason: "credit note"}); err != nil {
		t.Fatal(err)
	}
	h.Clock.Set(time.Date(2026, 11, 3, 6, 0, 0, 0, time.UTC))
	if _, err := closes.Close(ctx, h.Runner, h.Runner.Config, closes.CloseOptions{Month: oct, Who: "carol", Reason: "credit note booked"}); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		if _, err := h.Runner.RunJob(ctx, "run", nightly); err != nil {
			t.Fatalf("run %d: %v", 3+i, err)
		}
	}
	mails := ms.Received()
	if len(mails) != 3 {
		t.Fatalf("%d mails, want 3: the month's workbook, the first final, the final of the re-close", len(mails))
	}
	for i, want := range []string{"tally-cost-2026-10-final.xlsx", "tally-cost-2026-10-final-2.xlsx"} {
		m := prooftest.ParseMail(t, mails[1+i])
		hdr, text, attached, name := m.Header, m.Text, m.Attached, m.Name
		text = strings.ReplaceAll(text, "\r\n", "\n")
		if name != want || !strings.HasSuffix(hdr.Get("Subject"), "(final)") {
			t.Fatalf("mail %d carries %q (%q), want %s", 2+i, name, hdr.Get("Subject"), want)
		}
		onDisk, err := os.ReadFile(filepath.Join(h.Runner.Config.Reports.Dir, "2026-10", want))
		if err != nil || !bytes.Equal(onDisk, attached) {
			t.Fatalf("mail %d's attachment is not %s (%v)", 2+i, want, err)
		}
		if copied, err := os.ReadFile(filepath.Join(share, want)); err != nil || !bytes.Equal(copied, attached) {
			t.Fatalf("the folder's %s is not the final workbook (%v)", want, err)
		}
		// The mail quotes the attachment's Summary, to the displayed cent.
		tmp := filepath.Join(t.TempDir(), want)
		if err := os.WriteFile(tmp, attached, 0o600); err != nil {
			t.Fatal(err)
		}
		fig, err := reports.ReadSummary(tmp)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(text, fig.Text()) || !strings.Contains(text, "Month status: "+fig.Status) || len(fig.Rows) == 0 {
			t.Fatalf("mail %d does not say what its attachment's Summary says:\n%s\nSummary:\n%s", 2+i, text, fig.Text())
		}
		who := []string{"alice", "carol"}[i]
		if !strings.Contains(text, "by "+who) {
			t.Errorf("mail %d does not name who closed the month (%s):\n%s", 2+i, who, text)
		}
		for _, r := range fig.Rows {
			for _, v := range r[2:] {
				if strings.Count(v, ".") == 1 && len(v[strings.Index(v, ".")+1:]) > 2+4 {
					t.Errorf("mail %d shows %q, more decimals than the Summary's cents", 2+i, v)
				}
			}
		}
		if id, sum := hdr.Get("Message-Id"), sha256Hex(attached); !strings.Contains(id, sum[:32]) || !strings.HasSuffix(id, "@example.com>") {
			t.Errorf("mail %d Message-ID %q is not derived from the attachment's sha256 %s", 2+i, id, sum)
		}
	}
	prooftest.WithDB(t, h.DB, func(db *sql.DB) {
		var n int
		if err := db.QueryRow(`SELECT count(*) FROM deliveries WHERE status = 'sent' AND kind = 'final'`).Scan(&n); err != nil || n != 4 {
			t.Errorf("%d final deliveries sent (%v), want 4: two finals, each to the folder and by mail", n, err)
		}
	})
}

func sha256Hex(b []byte) string {
	tmp, _ := os.CreateTemp("", "sum")
	defer os.Remove(tmp.Name())
	tmp.Write(b)
	tmp.Close()
	s, _ := atomicfile.SHA256(tmp.Name())
	return s
}

// A mail the server took while Tally never heard back (as when a run is
// killed right after the server accepted it) is recorded as pending before
// it left; the next run sends the same bytes again with the same
// Message-ID, so mail clients show one message, and records it sent. (A
// workbook rebuilt meanwhile goes under a new Message-ID:
// TestDeliverKilledAtAnyMoment in cmd/tally.)
func TestDeliverResendAfterLostAnswerKeepsMessageID(t *testing.T) {
	ms := newMailServer(t)
	h, _, nightly := deliverHarness(t, ms, 2*time.Second)
	old := deliver.Attempts
	t.Cleanup(func() { deliver.Attempts = old })
	deliver.Attempts = 1
	ms.Hold(true)
	ctx := context.Background()
	_, err := h.Runner.RunJob(ctx, "run", nightly)
	var pe *job.Partial
	if !errors.As(err, &pe) {
		t.Fatalf("run 1: %v, want partial: the server never answered DATA", err)
	}
	prooftest.WithDB(t, h.DB, func(db *sql.DB) {
		var status, id string
		if err := db.QueryRow(`SELECT status, message_id FROM deliveries WHERE target LIKE 'smtp:%'`).Scan(&status, &id); err != nil || status != deliver.StatusPending || id == "" {
			t.Fatalf("delivery %q %q (%v), want pending with its Message-ID recorded before sending", status, id, err)
		}
	})
	ms.Hold(false)
	// Deliver only: the workbook is not written again.
	nightly.Run = []string{"deliver"}
	if _, err := h.Runner.RunJob(ctx, "run", nightly); err != nil {
		t.Fatalf("run 2: %v", err)
	}
	if _, err := h.Runner.RunJob(ctx, "run", nightly); err != nil {
		t.Fatalf("run 3: %v", err)
	}
	mails := ms.Received()
	if len(mails) != 2 {
		t.Fatalf("%d mails, want 2: the one whose answer was lost, and its resend", len(mails))
	}
	h1, h2 := prooftest.ParseMail(t, mails[0]).Header, prooftest.ParseMail(t, mails[1]).Header
	if h1.Get("Message-Id") == "" || h1.Get("Message-Id") != h2.Get("Message-Id") {
		t.Fatalf("Message-IDs %q and %q: a resend must carry the same", h1.Get("Message-Id"), h2.Get("Message-Id"))
	}
	prooftest.WithDB(t, h.DB, func(db *sql.DB) {
		var n int
		if err := db.QueryRow(`SELECT count(*) FROM deliveries WHERE target LIKE 'smtp:%' AND status = 'sent'`).Scan(&n); err != nil || n != 1 {
			t.Fatalf("%d mail deliveries sent (%v), want 1", n, err)
		}
	})
}

// Every wait on the mail server is bounded: a server that accepts the
// connection and never greets, and one that stalls after AUTH, each cost
// at most reports.deliver.smtp.timeout a try, then the run is partial
// naming the server; and a run cancelled (SIGTERM) while a send hangs
// ends at once, releasing the lock for the next run. A killed folder
// delivery's temporary file (a whole month's cost data) is removed by the
// next delivery.
func TestDeliverHungMailServerIsBounded(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	var held []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			held = append(held, c) // accepted, never greeted
		}
	}()
	t.Cleanup(func() {
		for _, c := range held {
			c.Close()
		}
	})
	h, share, nightly := deliverHarness(t, nil, 0)
	leftover := filepath.Join(share, ".tally-cost-2026-10.xlsx.123456.tmp")
	if err := os.WriteFile(leftover, []byte("a killed copy"), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	h.Runner.Config.Reports.Deliver.SMTP = runtest.SMTPConfig(t, ln.Addr().String(), 300*time.Millisecond)

	t.Run("never greets", func(t *testing.T) {
		began := time.Now()
		_, err := h.Runner.RunJob(ctx, "run", nightly)
		var pe *job.Partial
		if !errors.As(err, &pe) || !strings.Contains(err.Error(), "smtp:127.0.0.1") || !strings.Contains(err.Error(), "timeout") {
			t.Fatalf("run: %v, want partial naming the mail server and its timeout", err)
		}
		if took := time.Since(began); took > 20*time.Second {
			t.Fatalf("the run took %s against a server that never greets", took)
		}
		if _, err := os.Stat(leftover); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the killed delivery's temporary file is still in the folder: %v", err)
		}
	})

	t.Run("stalls after AUTH", func(t *testing.T) {
		ms := newMailServer(t)
		ms.Stall(time.Hour)
		deliver.RootCAs = ms.Pool
		h.Runner.Config.Reports.Deliver.SMTP = runtest.SMTPConfig(t, ms.Addr, 300*time.Millisecond)
		_, err := h.Runner.RunJob(ctx, "run", nightly)
		var pe *job.Partial
		if !errors.As(err, &pe) || !strings.Contains(err.Error(), "smtp:127.0.0.1") {
			t.Fatalf("run: %v, want partial naming the mail server", err)
		}
		if len(ms.Auths()) == 0 {
			t.Fatal("the server saw no AUTH: the stall was not after it")
		}
	})

	t.Run("cancelled", func(t *testing.T) {
		h.Runner.Config.Reports.Deliver.SMTP = runtest.SMTPConfig(t, ln.Addr().String(), time.Hour)
		ctx, cancel := context.WithCancel(context.Background())
		go func() {
			time.Sleep(2 * time.Second)
			cancel()
		}()
		began := time.Now()
		_, err := h.Runner.RunJob(ctx, "run", nightly)
		if err == nil {
			t.Fatal("a cancelled run reported success")
		}
		if took := time.Since(began); took > 10*time.Second {
			t.Fatalf("the cancelled run took %s to stop", took)
		}
		h.Runner.Config.Reports.Deliver.SMTP = nil
		if _, err := h.Runner.RunJob(context.Background(), "run", nightly); err != nil {
			t.Fatalf("the next run: %v (the lock must be free)", err)
		}
	})
}

// A final workbook whose bytes are not those its close recorded (edited,
// or replaced by hand) is never sent: the run is partial naming it, and
// the month's own workbook still goes.
func TestDeliverRefusesAlteredFinal(t *testing.T) {
	h, share, nightly := deliverHarness(t, nil, 0)
	ctx := context.Background()
	oct := prooftest.Day(t, "2026-10-01")
	if _, err := h.Runner.RunJob(ctx, "run", configs.Job{Name: "books", Run: []string{"fetch", "report"}}); err != nil {
		t.Fatal(err)
	}
	sum, err := closes.Close(ctx, h.Runner, h.Runner.Config, closes.CloseOptions{Month: oct, Who: "alice", Reason: "signed off"})
	if err != nil {
		t.Fatal(err)
	}
	// Another workbook put in its place: a whole workbook, not the one
	// signed.
	other, err := os.ReadFile(filepath.Join(h.Runner.Config.Reports.Dir, "2026-10", "tally-cost-2026-10.xlsx"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(sum.Close.FinalWorkbook, other, 0o640); err != nil {
		t.Fatal(err)
	}
	_, err = h.Runner.RunJob(ctx, "run", nightly)
	var pe *job.Partial
	if !errors.As(err, &pe) || !strings.Contains(err.Error(), "differs from the final workbook its close recorded") {
		t.Fatalf("run: %v, want partial naming the altered final", err)
	}
	if _, err := os.Stat(filepath.Join(share, filepath.Base(sum.Close.FinalWorkbook))); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the altered final reached the folder: %v", err)
	}
	if _, err := os.Stat(filepath.Join(share, "tally-cost-2026-10.xlsx")); err != nil {
		t.Fatalf("the month's workbook did not go: %v", err)
	}
}
