package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/xuri/excelize/v2"

	"github.com/tally-dev/tally/job"
)

// closedCentres is the chargeback the test adds after October closed:
// the sim's projects, newsroom and archive News's, sports-live Live's,
// training shared between them by rule.
const closedCentres = `allocation:
  cost_centres:
    - {name: News, projects: [newsroom, archive]}
    - {name: Live, projects: [sports-live]}
  rules:
`

// A month closed without chargeback stays wholly Unallocated whatever
// rules are added or changed since (cost_centre_monthly_cost through tally
// query), its statements say it is as closed with the close's stamp, the
// open month follows every change, and a reopen and a new close charge it
// back by the rules then in force.
func TestClosedMonthKeepsItsChargeback(t *testing.T) {
	s := newCLISim(t, time.Date(2026, 9, 1, 0, 0, 0, 0, time.UTC))
	s.now.Store(time.Date(2026, 11, 12, 3, 0, 0, 0, time.UTC).UnixNano())
	cfg, _ := cliConfig(t, s, time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC), "")
	base, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("USER", "controller")
	run := func(args ...string) string {
		t.Helper()
		out, code, stderr := cli(t, append([]string{args[0], "--config", cfg}, args[1:]...)...)
		if code != job.ExitOK {
			t.Fatalf("tally %v: exit %d\n%s\n%s", args, code, out, stderr)
		}
		return out
	}
	setRules := func(rules string) {
		t.Helper()
		if err := os.WriteFile(cfg, append(append([]byte{}, base...), closedCentres+rules...), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	centres := func(month string) string {
		t.Helper()
		return run("query", "--format", "csv", "SELECT cost_centre, currency, direct, shared_received, total FROM cost_centre_monthly_cost WHERE month = DATE '"+month+"' ORDER BY ALL")
	}
	// wholly says, per currency, whether the month's cost is all
	// Unallocated: one cost centre, its total the month's.
	wholly := func(month string) string {
		t.Helper()
		return run("query", "--format", "csv", `SELECT u.currency, count(c.cost_centre) = 1 AND bool_and(c.cost_centre = 'Unallocated' AND c.total = u.total AND c.shared_received = 0) AS wholly
FROM (SELECT currency, sum(cost) AS total FROM allocation_charges WHERE basis = 'usage' AND month = DATE '`+month+`' GROUP BY currency) u
LEFT JOIN cost_centre_monthly_cost c ON c.currency = u.currency AND c.basis = 'usage' AND c.month = DATE '`+month+`'
GROUP BY u.currency ORDER BY u.currency`)
	}

	run("fetch", "--from", "2026-10-01", "--to", "2026-11-01")
	run("close", "--month", "2026-10", "--reason", "october signed off")

	setRules("    - {name: training, from: 2026-09, share: {projects: [training]}, to: [News, Live], method: proportional}\n")
	run("fetch", "--from", "2026-11-01", "--to", "2026-11-08") // a run that writes takes the config's chargeback
	october := centres("2026-10-01")
	if got := wholly("2026-10-01"); strings.Contains(got, "false") || !strings.Contains(got, "USD,true") {
		t.Fatalf("October, closed without chargeback, is not wholly Unallocated after rules were added:\n%s\n%s", got, october)
	}
	proportional := centres("2026-11-01")
	if !strings.Contains(proportional, "\nLive,") || !strings.Contains(proportional, "\nNews,") {
		t.Fatalf("November, open, does not follow the rules:\n%s", proportional)
	}

	setRules("    - {name: training, from: 2026-09, share: {projects: [training]}, method: fixed, percent: {News: 10, Live: 90}}\n")
	run("fetch", "--from", "2026-11-01", "--to", "2026-11-08", "--refetch")
	if got := centres("2026-10-01"); got != october {
		t.Errorf("October moved with a change of the rules:\n%s\nwas\n%s", got, october)
	}
	if got := centres("2026-11-01"); got == proportional {
		t.Errorf("November did not follow the rule's change from proportional to fixed:\n%s", got)
	}

	// Its statements say so, with the close's stamp.
	run("report", "--month", "2026-10", "--chargeback")
	dir := filepath.Join(filepath.Dir(cfg), "reports", "2026-10")
	for _, c := range []string{"News", "Live"} {
		sub := statementLine(t, filepath.Join(dir, "tally-chargeback-2026-10-"+c+".xlsx"), 2)
		for _, w := range []string{"As closed: the month was closed 2026-", "by controller (reason: october signed off; fingerprint ", "content hash ", "final workbook tally-cost-2026-10-final.xlsx",
			"none: the month was closed without chargeback, so all its cost is Unallocated"} {
			if !strings.Contains(sub, w) {
				t.Errorf("%s's statement of closed October does not say %q:\n%s", c, w, sub)
			}
		}
	}

	// Reopened and closed again, it is charged back by the rules in force.
	run("close", "--month", "2026-10", "--reopen", "--reason", "charge it back")
	run("close", "--month", "2026-10", "--reason", "charged back")
	reclosed := centres("2026-10-01")
	if !strings.Contains(reclosed, "\nLive,") || reclosed == october {
		t.Fatalf("October, reopened and closed again, is not charged back:\n%s", reclosed)
	}
	setRules("    - {name: training, from: 2026-09, share: {projects: [training]}, to: [News, Live], method: even}\n")
	run("fetch", "--from", "2026-11-01", "--to", "2026-11-08", "--refetch")
	if got := centres("2026-10-01"); got != reclosed {
		t.Errorf("October, closed with rules, moved with a later change:\n%s\nwas\n%s", got, reclosed)
	}
	run("report", "--month", "2026-10", "--chargeback")
	sub := statementLine(t, filepath.Join(dir, "tally-chargeback-2026-10-Live.xlsx"), 2)
	if !strings.Contains(sub, "by controller (reason: charged back;") || !strings.Contains(sub, "the cost centres and rules in force when it closed") {
		t.Errorf("Live's statement of October closed again does not say it is as closed with its rules:\n%s", sub)
	}
}

// statementLine reads row's first cell of a statement's sheet.
func statementLine(t *testing.T, path string, row int) string {
	t.Helper()
	f, err := excelize.OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	v, err := f.GetCellValue("Statement", "A"+string(rune('0'+row)))
	if err != nil {
		t.Fatal(err)
	}
	return v
}
