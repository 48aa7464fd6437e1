package allocation_test

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/xuri/excelize/v2"

	"github.com/tally-dev/tally"
	"github.com/tally-dev/tally/closes"
	"github.com/tally-dev/tally/configs"
	"github.com/tally-dev/tally/deliver"
	"github.com/tally-dev/tally/export"
	"github.com/tally-dev/tally/internal/atomicfile"
	"github.com/tally-dev/tally/internal/testkit/chargebackcheck"
	"github.com/tally-dev/tally/internal/testkit/focuscheck"
	"github.com/tally-dev/tally/internal/testkit/prooftest"
	"github.com/tally-dev/tally/internal/testkit/runtest"
	"github.com/tally-dev/tally/job"
	"github.com/tally-dev/tally/reports"
	"github.com/tally-dev/tally/store"
)

// chargebackYAML is the allocation of the chargeback proofs: every method,
// over the sim's projects (newsroom and archive are News's, sports-live
// Sport's; training is nobody's: what no rule shares of it is
// Unallocated).
const chargebackYAML = `allocation:
  cost_centres:
    - name: News
      owner: news-finance@example.com
      projects: [newsroom, archive]
    - name: Sport
      owner: sport-finance@example.com
      projects: [sports-live]
  rules:
    - name: training storage
      from: 2026-09
      share: {projects: [training], meters: [storage_gb_hours]}
      method: fixed
      percent: {News: 33.333333, Sport: 66.666667}
    - name: archive egress
      from: 2026-09
      share: {projects: [archive], meters: [streaming_egress_gb]}
      to: [News, Sport]
      method: even
    - name: drm
      from: 2026-09
      share: {families: [Content Protection]}
      to: [Sport, News]
      method: proportional
    - name: egress
      from: 2026-09
      share: {projects: [sports-live], meters: [streaming_egress_gb]}
      to: [News, Sport]
      method: driver
      driver: video_encoding_ondemand
`

// The Chargeback sheet and the statements of a month fetched from the sim
// are the split of the sim's rows by the rules (chargebackcheck), per cost
// centre and currency; the sheet ties out to the month's total; a close
// freezes the rules, so a later change of them leaves the closed month
// and changes the open one.
func TestChargebackWorkbookStatementsAndClose(t *testing.T) {
	h := runtest.NewHarness(t, runtest.Setup{Granularity: tally.Day, Start: "2026-09-01", Now: "2026-11-02T03:00:00Z", Lookback: "2d", Extra: chargebackYAML})
	ctx := context.Background()
	sep, oct, nov := prooftest.Day(t, "2026-09-01"), prooftest.Day(t, "2026-10-01"), prooftest.Day(t, "2026-11-01")
	h.MustFetch()
	cfg := h.Runner.Config
	rows := h.Sim.Rows(h.Query(oct, nov))
	want := chargebackcheck.Totals(chargebackcheck.Split(rows, cfg.Allocation, oct))
	if _, ok := want["USD|"+tally.Unallocated]; !ok || len(want) < 5 {
		t.Fatalf("the fixture does not cover every case: %v", want)
	}

	f, _ := h.Workbook(oct, "october.xlsx")
	got := map[string]float64{}
	table, err := f.GetRows("Chargeback", excelize.Options{RawCellValue: true})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(table[0][:5], []string{"Cost centre", "Currency", "Direct", "Shared received", "Total"}) {
		t.Fatalf("Chargeback header %v", table[0])
	}
	var methods []string
	for _, r := range table[1:] {
		if len(r) < 5 || r[0] == "" {
			break
		}
		got[r[1]+"|"+r[0]] = mustFloat(t, r[4])
		if len(r) > 6 {
			methods = append(methods, r[6])
		}
	}
	if len(got) != len(want) {
		t.Errorf("Chargeback has %v, the split of the truth %v", got, want)
	}
	for k, w := range want {
		if got[k] != w.Float64() {
			t.Errorf("Chargeback %s: %v, the split of the truth %s", k, got[k], w)
		}
	}
	for _, m := range []string{"archive egress@2026-09 (even); drm@2026-09 (proportional); egress@2026-09 (driver)", "drm@2026-09 (proportional); egress@2026-09 (driver); training storage@2026-09 (fixed)"} {
		if !slices.Contains(methods, m) {
			t.Errorf("received-by texts %q lack %q", methods, m)
		}
	}
	// The tie-out says a difference of 0 in every currency.
	truth := h.Sim.Truth(h.Query(oct, nov)).Cost
	diffs := 0
	for _, r := range table {
		if len(r) >= 5 && r[0] == "Difference" {
			diffs++
			if mustFloat(t, r[4]) != 0 {
				t.Errorf("tie-out difference %v", r)
			}
		}
		if len(r) >= 5 && r[0] == "Month total (Summary)" && mustFloat(t, r[4]) != truth[r[1]].Float64() {
			t.Errorf("tie-out month total %v, truth %s", r, truth[r[1]])
		}
	}
	if diffs != len(truth) {
		t.Errorf("%d tie-out lines for %d currencies", diffs, len(truth))
	}

	// One statement per cost centre, whose totals are its split.
	st, err := store.Open(ctx, h.DB, store.ReadOnly())
	if err != nil {
		t.Fatal(err)
	}
	sts, err := reports.Statements(ctx, cfg, st.DB(), reports.Period{Month: oct, Basis: tally.BasisUsage, Granularity: tally.Day}, h.Clock.Now, h.Runner.Log)
	st.Close()
	if err != nil {
		t.Fatal(err)
	}
	if len(sts) != 2 || sts[0].CostCentre != "News" || sts[0].Owner != "news-finance@example.com" || sts[1].CostCentre != "Sport" {
		t.Fatalf("statements %+v", sts)
	}
	for _, s := range sts {
		sf, err := excelize.OpenFile(s.Path)
		if err != nil {
			t.Fatal(err)
		}
		rows, err := sf.GetRows("Statement", excelize.Options{RawCellValue: true})
		sf.Close()
		if err != nil {
			t.Fatal(err)
		}
		if rows[0][0] != "Chargeback statement: "+s.CostCentre+", 2026-10" {
			t.Errorf("statement title %q", rows[0][0])
		}
		totals, received := map[string]float64{}, map[string]float64{}
		section := ""
		for _, r := range rows {
			if len(r) == 1 {
				section = r[0]
			}
			if len(r) >= 7 && r[0] == "Total" {
				totals[r[2]] = mustFloat(t, r[6])
			}
			if section == "Shared costs received" && len(r) >= 7 && r[0] != "Rule" {
				received[r[2]] += mustFloat(t, r[6])
			}
		}
		for k, w := range want {
			cur, centre, _ := cut(k)
			if centre != s.CostCentre {
				continue
			}
			if totals[cur] != w.Float64() {
				t.Errorf("statement of %s, %s total %v, the split %s", s.CostCentre, cur, totals[cur], w)
			}
			if received[cur] == 0 {
				t.Errorf("statement of %s lists no shared cost received in %s", s.CostCentre, cur)
			}
		}
	}

	// Close October; then the rules change, from September on: September
	// follows, the closed October keeps the rules it closed under.
	centres := func() []string {
		var out []string
		prooftest.WithDB(t, store.PublishedPath(h.DB), func(db *sql.DB) {
			r, err := db.Query(`SELECT strftime(month, '%Y-%m') || ' ' || currency || ' ' || cost_centre || ' ' || CAST(total AS VARCHAR) FROM cost_centre_monthly_cost ORDER BY ALL`)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			for r.Next() {
				var s string
				if err := r.Scan(&s); err != nil {
					t.Fatal(err)
				}
				out = append(out, s)
			}
		})
		return out
	}
	if _, err := closes.Close(ctx, h.Runner, h.Runner.Config, closes.CloseOptions{Month: oct, Who: "finance", Reason: "signed off"}); err != nil {
		t.Fatal(err)
	}
	before := centres()
	prooftest.WithDB(t, h.DB, func(db *sql.DB) {
		var hash string
		if err := db.QueryRow(`SELECT allocation_hash FROM month_closes`).Scan(&hash); err != nil || hash != cfg.Allocation.Hash(oct) {
			t.Errorf("the close's allocation_hash %q (%v), want %q", hash, err, cfg.Allocation.Hash(oct))
		}
	})
	cfg.Allocation.Rules[0].Percent = []tally.Decimal{tally.MustDecimal("50"), tally.MustDecimal("50")}
	h.Clock.Set(time.Date(2026, 11, 3, 3, 0, 0, 0, time.UTC))
	h.MustFetch()
	after := centres()
	of := func(lines []string, month string) []string {
		var out []string
		for _, l := range lines {
			if l[:7] == month {
				out = append(out, l)
			}
		}
		return out
	}
	if d := prooftest.FirstDiff(of(after, "2026-10"), of(before, "2026-10")); d != "" {
		t.Errorf("closed October changed with the rules: %s", d)
	}
	if slices.Equal(of(after, "2026-09"), of(before, "2026-09")) {
		t.Error("open September did not follow the changed rules")
	}
	wantSep := chargebackcheck.Totals(chargebackcheck.Split(h.Sim.Rows(h.Query(sep, oct)), cfg.Allocation, sep))
	for k, w := range wantSep {
		cur, centre, _ := cut(k)
		if line := fmt.Sprintf("2026-09 %s %s %s", cur, centre, w); !slices.Contains(after, line) {
			t.Errorf("September under the changed rules lacks %q: %v", line, of(after, "2026-09"))
		}
	}

	// FOCUS 1.3 exports the open months' shares as split cost allocation
	// and conforms (closed October's frozen rows stay whole).
	lake := filepath.Join(h.Dir, "focus13")
	if err := h.Published(ctx, func(env *job.Env) error {
		_, err := export.Run(ctx, env, export.Request{Dir: lake, Format: configs.ExportFOCUS})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	prooftest.WithDB(t, h.DB, func(db *sql.DB) {
		v, err := focuscheck.ExportViolations(ctx, db, lake)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range v {
			t.Errorf("FOCUS 1.3 with chargeback: %s", line)
		}
		var months []string
		r, err := db.Query(`SELECT DISTINCT strftime(timezone('UTC', ChargePeriodStart), '%Y-%m') FROM read_parquet('` + filepath.Join(lake, "focus", "*", "*.parquet") + `', hive_partitioning = true) WHERE AllocatedMethodId IS NOT NULL ORDER BY 1`)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		for r.Next() {
			var m string
			if err := r.Scan(&m); err != nil {
				t.Fatal(err)
			}
			months = append(months, m)
		}
		if !slices.Contains(months, "2026-09") || slices.Contains(months, "2026-10") {
			t.Errorf("allocated rows charged in %v, want open September and not closed October", months)
		}
	})
}

func mustFloat(t *testing.T, s string) float64 {
	t.Helper()
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatalf("not a number: %q", s)
	}
	return v
}

func cut(k string) (string, string, bool) {
	for i := 0; i < len(k); i++ {
		if k[i] == '|' {
			return k[:i], k[i+1:], true
		}
	}
	return k, "", false
}

// A close writes each cost centre's final statement, recorded with it;
// the deliver step mails each to its owner once, beside the final
// workbook to finance; a final statement no close recorded (a kill before
// the record) is removed.
func TestFinalStatementsMailedToOwners(t *testing.T) {
	const password = "smtp-S3CRET-cb-41"
	t.Setenv("TALLY_TEST_SMTP_PASSWORD", password)
	oldPause, oldRoots := deliver.Pause, deliver.RootCAs
	t.Cleanup(func() { deliver.Pause, deliver.RootCAs = oldPause, oldRoots })
	deliver.Pause = time.Millisecond
	ms := prooftest.NewMailServer(t)
	deliver.RootCAs = ms.Pool
	h := runtest.NewHarness(t, runtest.Setup{Granularity: tally.Day, Start: "2026-10-01", Now: "2026-11-02T03:00:00Z", Lookback: "2d", Extra: chargebackYAML})
	ctx := context.Background()
	oct, nov := prooftest.Day(t, "2026-10-01"), prooftest.Day(t, "2026-11-01")
	h.MustFetch()
	cfg := h.Runner.Config
	cfg.Reports.Deliver = configs.DeliverConfig{SMTP: runtest.SMTPConfig(t, ms.Addr, time.Minute)}
	if _, err := closes.Close(ctx, h.Runner, h.Runner.Config, closes.CloseOptions{Month: oct, Who: "finance", Reason: "signed off"}); err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	prooftest.WithDB(t, h.DB, func(db *sql.DB) {
		r, err := db.Query(`SELECT cost_centre, owner, path, sha256 FROM month_close_statements ORDER BY cost_centre`)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		for r.Next() {
			var centre, owner, path, sum string
			if err := r.Scan(&centre, &owner, &path, &sum); err != nil {
				t.Fatal(err)
			}
			if filepath.Base(path) != "tally-chargeback-2026-10-final-"+centre+".xlsx" {
				t.Errorf("final statement %s", path)
			}
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if got, _ := atomicfile.SHA256(path); got != sum {
				t.Errorf("%s: sha256 %s, recorded %s", path, got, sum)
			}
			files[owner] = b
		}
	})
	if len(files) != 2 {
		t.Fatalf("final statements for %d owners, want 2", len(files))
	}
	// The final statement's totals are the split of the truth.
	want := chargebackcheck.Totals(chargebackcheck.Split(h.Sim.Rows(h.Query(oct, nov)), cfg.Allocation, oct))
	sf, err := excelize.OpenFile(filepath.Join(cfg.Reports.Dir, "2026-10", "tally-chargeback-2026-10-final-Sport.xlsx"))
	if err != nil {
		t.Fatal(err)
	}
	rows, _ := sf.GetRows("Statement", excelize.Options{RawCellValue: true})
	sf.Close()
	if !strings.Contains(strings.Join(rows[1], " "), "Final: the month was closed") {
		t.Errorf("the final statement does not say it is final: %q", rows[1])
	}
	for _, r := range rows {
		if len(r) >= 7 && r[0] == "Total" && mustFloat(t, r[6]) != want[r[2]+"|Sport"].Float64() {
			t.Errorf("Sport's final %s total %s, the split %s", r[2], r[6], want[r[2]+"|Sport"])
		}
	}

	// A final statement a close a kill cut short left, unrecorded.
	orphan := filepath.Join(cfg.Reports.Dir, "2026-10", "tally-chargeback-2026-10-final-2-News.xlsx")
	if err := os.WriteFile(orphan, []byte("unsigned"), 0o640); err != nil {
		t.Fatal(err)
	}
	job := configs.Job{Name: "nightly", Cron: "@daily", Run: []string{"deliver"}}
	for run := 1; run <= 2; run++ {
		if _, err := h.Runner.RunJob(ctx, "run", job); err != nil {
			t.Fatalf("deliver run %d: %v", run, err)
		}
		if n := len(ms.Received()); n != 3 {
			t.Fatalf("after deliver run %d: %d mails, want 3: the final workbook to finance and a statement to each owner, once", run, n)
		}
	}
	if _, err := os.Stat(orphan); !os.IsNotExist(err) {
		t.Errorf("the unrecorded final statement is still there (%v)", err)
	}
	for _, raw := range ms.Received() {
		m := prooftest.ParseMail(t, raw)
		to, subject := m.Header.Get("To"), m.Header.Get("Subject")
		if strings.Contains(subject, "chargeback statement") {
			owner := strings.Trim(to, "<>")
			if !bytes.Equal(m.Attached, files[owner]) {
				t.Errorf("mail to %s (%q) does not carry that owner's final statement", to, subject)
			}
			if !strings.Contains(m.Text, "Total USD: ") {
				t.Errorf("statement mail text %q", m.Text)
			}
			delete(files, owner)
		} else if !strings.Contains(to, "finance@example.com") || !strings.HasSuffix(subject, "(final)") {
			t.Errorf("mail to %q: %q", to, subject)
		}
	}
	if len(files) != 0 {
		t.Errorf("owners without their statement: %v", files)
	}
}
