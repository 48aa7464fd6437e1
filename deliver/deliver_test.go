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

	"github.com/tally-dev/tally/configs"
	"github.com/tally-dev/tally/deliver"
	"github.com/tally-dev/tally/internal/testkit/prooftest"
	"github.com/tally-dev/tally/internal/testkit/runtest"
	"github.com/tally-dev/tally/job"
	"github.com/tally-dev/tally/store"
)

// newMailServer is a real SMTP server in-process (prooftest.MailServer).
func newMailServer(t *testing.T) *prooftest.MailServer { return prooftest.NewMailServer(t) }

// The deliver step sends the finished month's workbook by mail (STARTTLS,
// AUTH, the workbook attached intact, the totals in the text) and to a
// shared folder, once each. A mail server that refuses makes the run
// partial naming the delivery; the next run delivers it; a third sends
// nothing. The password is in no log and not in the database.
func TestDeliverWorkbooks(t *testing.T) {
	const password = "smtp-S3CRET-7c1e"
	t.Setenv("TALLY_TEST_SMTP_PASSWORD", password)
	oldPause, oldRoots := deliver.Pause, deliver.RootCAs
	t.Cleanup(func() { deliver.Pause, deliver.RootCAs = oldPause, oldRoots })
	deliver.Pause = time.Millisecond
	ms := newMailServer(t)
	deliver.RootCAs = ms.Pool
	host, port, _ := net.SplitHostPort(ms.Addr)
	var portN int
	for _, c := range port {
		portN = portN*10 + int(c-'0')
	}

	h := runtest.NewHarness(t, runtest.Setup{Granularity: "day", Start: "2026-10-01", Now: "2026-11-03T03:00:00Z", Months: []string{"previous"}})
	share := filepath.Join(t.TempDir(), "finance")
	if err := os.Mkdir(share, 0o750); err != nil {
		t.Fatal(err)
	}
	h.Runner.Config.Reports.Deliver = configs.DeliverConfig{Dir: share, SMTP: &configs.SMTPConfig{
		Host: host, Port: portN, Security: "starttls", Username: "tally", PasswordEnv: "TALLY_TEST_SMTP_PASSWORD",
		From: "tally@example.com", To: []string{"finance@example.com"}, Subject: "Tally cost workbook {month}",
	}}
	nightly := configs.Job{Name: "nightly", Cron: "@daily", Run: []string{"fetch", "report", "deliver"}}
	book := filepath.Join(h.Runner.Config.Reports.Dir, "2026-10", "tally-cost-2026-10.xlsx")

	// Run 1: the mail server refuses; the folder gets its copy.
	ms.Refuse(true)
	sum, err := h.Runner.RunJob(context.Background(), "run", nightly)
	var pe *job.Partial
	if !errors.As(err, &pe) || sum.Run.Status != store.RunPartial || !strings.Contains(err.Error(), "smtp:"+host) || !strings.Contains(err.Error(), "tally-cost-2026-10.xlsx") {
		t.Fatalf("run 1: %v (%s); want partial naming the mail delivery of October's workbook", err, sum.Run.Status)
	}
	copied, err := os.ReadFile(filepath.Join(share, "tally-cost-2026-10.xlsx"))
	if err != nil {
		t.Fatalf("the shared folder has no copy: %v", err)
	}
	if wb, _ := os.ReadFile(book); !bytes.Equal(copied, wb) {
		t.Error("the folder's copy differs from the workbook")
	}

	// Run 2: the server takes it: delivered once, intact.
	ms.Refuse(false)
	if _, err := h.Runner.RunJob(context.Background(), "run", nightly); err != nil {
		t.Fatalf("run 2: %v", err)
	}
	wb, _ := os.ReadFile(book)
	if len(ms.Received()) != 1 {
		t.Fatalf("%d messages received, want 1", len(ms.Received()))
	}
	if len(ms.Auths()) == 0 || ms.Auths()[0] != "tally:"+password {
		t.Errorf("AUTH %q, want the user and the password from password_env", ms.Auths())
	}
	got := prooftest.ParseMail(t, ms.Received()[0])
	if subject := got.Header.Get("Subject"); subject != "Tally cost workbook 2026-10" {
		t.Errorf("subject %q", subject)
	}
	if !strings.HasPrefix(got.Type, deliver.XLSXType) {
		t.Errorf("attachment type %q, want %s", got.Type, deliver.XLSXType)
	}
	text, attached := got.Text, got.Attached
	if !bytes.Equal(attached, wb) {
		t.Errorf("the attachment (%d bytes) is not the workbook (%d bytes)", len(attached), len(wb))
	}
	if !strings.Contains(text, "usage value") || !strings.Contains(text, "EUR") || !strings.Contains(text, "October 2026") {
		t.Errorf("the text has no totals per currency:\n%s", text)
	}

	// Run 3: nothing new to deliver.
	if _, err := h.Runner.RunJob(context.Background(), "run", nightly); err != nil {
		t.Fatalf("run 3: %v", err)
	}
	if len(ms.Received()) != 1 {
		t.Errorf("%d messages after a third run, want the one: a workbook is delivered once", len(ms.Received()))
	}
	prooftest.WithDB(t, h.DB, func(db *sql.DB) {
		var n int
		if err := db.QueryRow(`SELECT count(*) FROM deliveries WHERE path LIKE '%tally-cost-2026-10.xlsx'`).Scan(&n); err != nil || n != 2 {
			t.Errorf("%d deliveries recorded (%v), want 2: the folder and the mail, once each", n, err)
		}
	})
	if strings.Contains(h.Logs.String(), password) {
		t.Error("the password is in the log")
	}
	if b, _ := os.ReadFile(h.DB); bytes.Contains(b, []byte(password)) {
		t.Error("the password is in the database")
	}
}
