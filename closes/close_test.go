package closes

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/xuri/excelize/v2"

	"github.com/tally-dev/tally"
	"github.com/tally-dev/tally/configs"
	"github.com/tally-dev/tally/export"
	"github.com/tally-dev/tally/internal/atomicfile"
	"github.com/tally-dev/tally/internal/secret"
	"github.com/tally-dev/tally/internal/testkit/focuscheck"
	"github.com/tally-dev/tally/internal/testkit/prooftest"
	"github.com/tally-dev/tally/internal/testkit/runtest"
	"github.com/tally-dev/tally/job"
	"github.com/tally-dev/tally/reports"
	"github.com/tally-dev/tally/schedules"
)

// exportFrom is tally export against the harness h: the analysts'
// published copy, the request over the config's export section. (Not in
// runtest, so that export's own tests may use runtest.)
func exportFrom(ctx context.Context, h *runtest.Harness, req export.Request) (export.Summary, error) {
	st, err := schedules.OpenPublished(ctx, h.Runner.Config, h.Runner.Log)
	if err != nil {
		return export.Summary{}, fmt.Errorf("export: %w", err)
	}
	defer st.Close()
	return export.Run(ctx, &job.Env{Config: h.Runner.Config, Store: st, Log: h.Runner.Log, Clock: h.Runner.Now}, req)
}

// focusSums sums the focus view's BilledCost and x_Cost per currency for
// one billing period and charge class (NULL: usage rows), exactly.
func focusSums(t *testing.T, db *sql.DB, period time.Time, correction bool) map[string]string {
	t.Helper()
	return focusSumsOf(t, db, "focus", period, correction)
}

// focusSumsOf is focusSums over from: the view, or the query tally export
// --format focus runs (export.FOCUSQuery).
func focusSumsOf(t *testing.T, db *sql.DB, from string, period time.Time, correction bool) map[string]string {
	t.Helper()
	class := "ChargeClass IS NULL"
	if correction {
		class = "ChargeClass = 'Correction'"
	}
	rows, err := db.Query(`SELECT BillingCurrency, CAST(sum(BilledCost) AS VARCHAR), CAST(sum(x_Cost) AS VARCHAR), CAST(sum(EffectiveCost) AS VARCHAR)
FROM `+from+` WHERE x_Granularity = 'day' AND x_Basis = 'usage' AND BillingPeriodStart = CAST(? AS TIMESTAMP) AT TIME ZONE 'UTC' AND `+class+`
GROUP BY 1`, period)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var cur, billed, cost, eff string
		if err := rows.Scan(&cur, &billed, &cost, &eff); err != nil {
			t.Fatal(err)
		}
		out[cur] = "billed " + billed + " cost " + cost + " effective " + eff
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// adjustmentTotals sums closed_month_adjustments' difference per currency.
func adjustmentTotals(t *testing.T, db *sql.DB) map[string]tally.Decimal {
	t.Helper()
	rows, err := db.Query(`SELECT currency, CAST(sum(difference) AS VARCHAR) FROM closed_month_adjustments GROUP BY currency`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]tally.Decimal{}
	for rows.Next() {
		var cur, s string
		if err := rows.Scan(&cur, &s); err != nil {
			t.Fatal(err)
		}
		out[cur] = tally.MustDecimal(s)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func cents(d tally.Decimal) int64 {
	r := new(big.Rat).Mul(d.Rat(), big.NewRat(100, 1))
	f, _ := r.Float64()
	return int64(math.Round(f))
}

// TestCloseOctoberThenLateChargesAreAdjustments is issue 12's proof:
// October is closed while its last hours are still provisional, the
// simulator then charges them in November, and a later run loads them. The
// final October workbook keeps its bytes, November's workbook shows the
// simulator's difference per currency to the cent, and FOCUS sums for
// October do not move: the difference is Correction rows billed later.
func TestCloseOctoberThenLateChargesAreAdjustments(t *testing.T) {
	h := runtest.NewHarness(t, runtest.Setup{Granularity: tally.Day, Start: "2026-10-01", Now: "2026-11-01T03:00:00Z", Lookback: "5d", Months: []string{"current"}})
	ctx := context.Background()
	oct, nov := prooftest.Day(t, "2026-10-01"), prooftest.Day(t, "2026-11-01")
	octQ := h.Query(oct, nov)
	h.MustFetch()
	atClose := h.Sim.Truth(octQ)

	sum, err := Close(ctx, h.Runner, h.Runner.Config, CloseOptions{Month: oct, Who: "finance-test", Reason: "October signed off"})
	if err != nil {
		t.Fatalf("close: %v", err)
	}
	final := reports.FinalPath(h.Runner.Config.Reports.Dir, oct, "", 1)
	if sum.Close.FinalWorkbook != final {
		t.Fatalf("final workbook %q, want %q", sum.Close.FinalWorkbook, final)
	}
	before, err := os.ReadFile(final)
	if err != nil {
		t.Fatal(err)
	}
	var focusBefore map[string]string
	prooftest.WithDB(t, h.DB, func(db *sql.DB) {
		// The fingerprint is the truth at close, exactly.
		var rows int64
		var who, reason, action, hash string
		if err := db.QueryRow(`SELECT rows, who, reason, action, content_hash FROM month_closes`).Scan(&rows, &who, &reason, &action, &hash); err != nil {
			t.Fatal(err)
		}
		if rows != int64(atClose.Rows) || who != "finance-test" || reason != "October signed off" || action != "close" || len(hash) != 64 {
			t.Fatalf("month_closes: rows %d who %q reason %q action %q hash %q; want rows %d", rows, who, reason, action, hash, atClose.Rows)
		}
		cost := map[string]tally.Decimal{}
		r, err := db.Query(`SELECT CAST(k AS VARCHAR), CAST(v AS VARCHAR) FROM (SELECT unnest(map_keys(cost)) AS k, unnest(map_values(cost)) AS v FROM month_closes)`)
		if err != nil {
			t.Fatal(err)
		}
		for r.Next() {
			var k, v string
			if err := r.Scan(&k, &v); err != nil {
				t.Fatal(err)
			}
			cost[k] = tally.MustDecimal(v)
		}
		r.Close()
		if d := prooftest.SameTotals(cost, atClose.Cost); d != "" {
			t.Fatalf("month_closes.cost is not the truth at close: %s", d)
		}
		if adj := adjustmentTotals(t, db); len(adj) == 0 {
			t.Fatal("closed_month_adjustments has no rows for the closed month")
		} else {
			for cur, d := range adj {
				if !d.IsZero() {
					t.Fatalf("right after the close, %s differs by %s", cur, d)
				}
			}
		}
		focusBefore = focusSums(t, db, oct, false)
	})
	if len(focusBefore) == 0 {
		t.Fatal("no FOCUS rows for October")
	}

	// Two days later the simulator has charged October's last hours; the
	// nightly run loads them (lookback) and writes November's workbook.
	h.Clock.Set(time.Date(2026, 11, 3, 3, 0, 0, 0, time.UTC))
	later := h.Sim.Truth(octQ)
	want := map[string]tally.Decimal{}
	nonZero := false
	for cur, c := range later.Cost {
		d := c.Add(negate(atClose.Cost[cur]))
		want[cur] = d
		nonZero = nonZero || !d.IsZero()
	}
	if !nonZero {
		t.Fatal("the simulator did not revise October between the close and the later run; the test proves nothing")
	}
	t.Logf("October at close %v, two days later %v: difference %v", atClose.Cost, later.Cost, want)
	night, err := runtest.RunNightly(ctx, h.Runner, nil)
	if err != nil {
		t.Fatalf("nightly: %v", err)
	}
	if len(night.Reports) != 1 || !night.Reports[0].Month.Equal(nov) {
		t.Fatalf("reports written: %+v", night.Reports)
	}
	h.WantExact(h.DB, "October after the revision", octQ)

	after, err := os.ReadFile(final)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(before, after) {
		t.Fatal("the final October workbook changed")
	}

	prooftest.WithDB(t, h.DB, func(db *sql.DB) {
		if d := prooftest.SameTotals(adjustmentTotals(t, db), want); d != "" {
			t.Fatalf("closed_month_adjustments is not the simulator's difference: %s", d)
		}
		if got := focusSums(t, db, oct, false); !equalMaps(got, focusBefore) {
			t.Fatalf("FOCUS sums for October moved:\nbefore %v\nafter  %v", focusBefore, got)
		}
		exported, err := export.FOCUSQuery(context.Background(), db)
		if err != nil {
			t.Fatal(err)
		}
		if got := focusSumsOf(t, db, "("+exported+")", oct, false); !equalMaps(got, focusBefore) {
			t.Fatalf("FOCUS export sums for October moved:\nbefore %v\nafter  %v", focusBefore, got)
		}
		// The difference is there, as Correction rows in a later billing
		// period, never in October.
		var n int
		if err := db.QueryRow(`SELECT count(*) FROM focus WHERE ChargeClass = 'Correction' AND BillingPeriodStart <= TIMESTAMPTZ '2026-10-01 00:00:00+00'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != 0 {
			t.Fatalf("%d Correction rows billed in or before the closed October", n)
		}
		corr := map[string]tally.Decimal{}
		r, err := db.Query(`SELECT BillingCurrency, CAST(sum(x_Cost) AS VARCHAR) FROM focus WHERE ChargeClass = 'Correction' AND x_Granularity = 'day' AND x_Basis = 'usage' GROUP BY 1`)
		if err != nil {
			t.Fatal(err)
		}
		for r.Next() {
			var cur, s string
			if err := r.Scan(&cur, &s); err != nil {
				t.Fatal(err)
			}
			corr[cur] = tally.MustDecimal(s)
		}
		r.Close()
		if d := prooftest.SameTotals(corr, nonZeroOnly(want)); d != "" {
			t.Fatalf("FOCUS Correction rows are not the difference: %s", d)
		}
		// The frozen and Correction rows still conform to FOCUS 1.2.
		v, err := focuscheck.Violations(context.Background(), db, `(SELECT * FROM focus WHERE x_Granularity = 'day' AND x_Basis = 'usage')`)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range v {
			t.Errorf("FOCUS 1.2 with a closed month: %s", line)
		}
	})

	// The exports, 1.2 and 1.3, conform (one SkuId per SkuPriceId among
	// them), and the frozen and Correction rows carry the billing
	// account's name, the sku and the rest as November's rows of the same
	// payment method, project and meter do. 1.3's metadata says October,
	// closed, is complete and the months after it are not.
	lake := filepath.Join(h.Dir, "focus13")
	for _, version := range []string{export.FOCUS12, export.FOCUS13} {
		dir := filepath.Join(h.Dir, "focus"+version)
		if version == export.FOCUS13 {
			dir = lake
		}
		if _, err := exportFrom(context.Background(), h, export.Request{Dir: dir, Format: configs.ExportFOCUS, FOCUSVersion: version}); err != nil {
			t.Fatal(err)
		}
		prooftest.WithDB(t, h.DB, func(db *sql.DB) {
			v, c, err := focuscheck.Export(context.Background(), db, dir, version)
			if err != nil {
				t.Fatal(err)
			}
			for _, line := range v {
				t.Errorf("FOCUS %s with a closed month: %s", version, line)
			}
			frozen, corrections, unnamed, compared, differ := c.Frozen, c.Corrections, c.Unnamed, c.Compared, c.Differ
			if frozen == 0 || corrections == 0 || compared == 0 {
				t.Fatalf("FOCUS %s: %d frozen rows, %d Correction rows of the closed month, %d pairs with November's rows: the test proves nothing", version, frozen, corrections, compared)
			}
			if unnamed > 0 || differ > 0 {
				t.Errorf("FOCUS %s: %d rows of a payment method without BillingAccountName; %d of %d frozen or Correction rows carry the account, sku, service, region or labels otherwise than the other rows of their payment method, project and meter", version, unnamed, differ, compared)
			}
		})
	}
	var md struct {
		Periods []struct {
			BillingPeriodStart string
			Complete           bool
		} `json:"x_BillingPeriods"`
		Recency []struct {
			TimeSectors []struct {
				TimeSectorStart    string
				TimeSectorComplete bool
			}
		}
	}
	b, err := os.ReadFile(filepath.Join(lake, export.FOCUSMetadataName))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &md); err != nil {
		t.Fatal(err)
	}
	complete := map[string]bool{}
	for _, p := range md.Periods {
		complete[p.BillingPeriodStart[:7]] = p.Complete
	}
	if !complete["2026-10"] || complete["2026-11"] || len(complete) < 2 {
		t.Errorf("billing periods complete: %v, want 2026-10 only", complete)
	}
	for _, s := range md.Recency[0].TimeSectors {
		if s.TimeSectorComplete != strings.HasPrefix(s.TimeSectorStart, "2026-10") {
			t.Errorf("time sector %s complete %v", s.TimeSectorStart, s.TimeSectorComplete)
			break
		}
	}

	// November's workbook: the Summary's adjustment per currency and the
	// sheet's lines, to the cent.
	f, err := excelize.OpenFile(night.Reports[0].Path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	summary, err := f.GetRows("Summary", excelize.Options{RawCellValue: true})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int64{}
	for _, row := range summary {
		if len(row) >= 3 && row[0] == "2026-10" {
			v, err := strconv.ParseFloat(row[2], 64)
			if err != nil {
				t.Fatalf("Summary adjustment %q: %v", row[2], err)
			}
			got[row[1]] = int64(math.Round(v * 100))
		}
	}
	sheet, err := f.GetRows("Adjustments to closed months", excelize.Options{RawCellValue: true})
	if err != nil {
		t.Fatalf("November's workbook has no adjustments sheet: %v", err)
	}
	lines := map[string]float64{}
	for _, row := range sheet[1:] {
		if len(row) == 0 {
			break // the total rows follow the lines, below a blank row
		}
		v, err := strconv.ParseFloat(row[8], 64)
		if err != nil {
			t.Fatalf("adjustment line %v: %v", row, err)
		}
		lines[row[5]] += v
	}
	for cur, d := range nonZeroOnly(want) {
		if got[cur] != cents(d) {
			t.Errorf("Summary adjustment %s: %d cents, want %d (%s)", cur, got[cur], cents(d), d)
		}
		if c := int64(math.Round(lines[cur] * 100)); c != cents(d) {
			t.Errorf("adjustments sheet %s: %d cents, want %d", cur, c, cents(d))
		}
	}
	if len(got) != len(nonZeroOnly(want)) {
		t.Errorf("Summary adjustments %v, want currencies of %v", got, want)
	}
}

func negate(d tally.Decimal) tally.Decimal {
	return tally.MustDecimal("0").Add(tally.NewDecimal(new(big.Int).Neg(mustScaled(d)), d.Scale()))
}

func mustScaled(d tally.Decimal) *big.Int {
	v, err := d.Scaled(d.Scale())
	if err != nil {
		panic(err)
	}
	return v
}

func nonZeroOnly(m map[string]tally.Decimal) map[string]tally.Decimal {
	out := map[string]tally.Decimal{}
	for k, v := range m {
		if !v.IsZero() {
			out[k] = v
		}
	}
	return out
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// TestCloseRefusals: a month not over, not fully loaded, already closed,
// and a reopen without a reason are refused, saying why; a reopen with a
// reason is its own row.
func TestCloseRefusals(t *testing.T) {
	h := runtest.NewHarness(t, runtest.Setup{Granularity: tally.Day, Start: "2026-10-01", Now: "2026-11-02T03:00:00Z"})
	ctx := context.Background()
	oct, nov, sep := prooftest.Day(t, "2026-10-01"), prooftest.Day(t, "2026-11-01"), prooftest.Day(t, "2026-09-01")
	refusal := func(o CloseOptions, want ...string) {
		t.Helper()
		_, err := Close(ctx, h.Runner, h.Runner.Config, o)
		var re *RefusedError
		if !errors.As(err, &re) {
			t.Fatalf("close %+v: %v, want a refusal", o, err)
		}
		for _, w := range want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("refusal %q does not say %q", err, w)
			}
		}
	}
	refusal(CloseOptions{Month: nov, Who: "t"}, "--month 2026-11 is not over", "2026-12-01")
	h.MustFetch()
	refusal(CloseOptions{Month: sep, Who: "t"}, "not fully loaded", "30 day(s)", "2026-09-01", "tally fetch --from 2026-09-01 --to 2026-10-01")
	refusal(CloseOptions{Month: oct, Who: "t", Org: "emea"}, `--org "emea": this config has no organizations: list`)
	if _, err := Close(ctx, h.Runner, h.Runner.Config, CloseOptions{Month: oct, Who: "alice", Reason: "done"}); err != nil {
		t.Fatal(err)
	}
	refusal(CloseOptions{Month: oct, Who: "bob"}, "already closed", "2026-11-02 03:00", "alice", "--reopen")
	refusal(CloseOptions{Month: oct, Who: "bob", Reopen: true}, "--reason is required with --reopen")
	if _, err := Close(ctx, h.Runner, h.Runner.Config, CloseOptions{Month: oct, Who: "bob", Reopen: true, Reason: "credit note"}); err != nil {
		t.Fatal(err)
	}
	// Reopened, closing again writes a new final under its own name: the
	// first, which finance may have signed, is never rewritten.
	first := reports.FinalPath(h.Runner.Config.Reports.Dir, oct, "", 1)
	signed, err := os.ReadFile(first)
	if err != nil {
		t.Fatal(err)
	}
	h.Clock.Set(time.Date(2026, 11, 2, 4, 0, 0, 0, time.UTC))
	sum, err := Close(ctx, h.Runner, h.Runner.Config, CloseOptions{Month: oct, Who: "carol", Reason: "credit note booked"})
	if err != nil {
		t.Fatal(err)
	}
	second := reports.FinalPath(h.Runner.Config.Reports.Dir, oct, "", 2)
	if sum.Close.FinalWorkbook != second || !strings.HasSuffix(second, "tally-cost-2026-10-final-2.xlsx") {
		t.Fatalf("the re-close wrote %s, want %s", sum.Close.FinalWorkbook, second)
	}
	if now, err := os.ReadFile(first); err != nil || !bytes.Equal(now, signed) {
		t.Fatalf("the first final workbook changed when the month was closed again (%v)", err)
	}
	if fig, err := reports.ReadSummary(second); err != nil || !strings.Contains(fig.Status, "by carol") || !strings.Contains(fig.Status, "final workbook (tally-cost-2026-10-final-2.xlsx)") {
		t.Fatalf("the second final's month status %q (%v) does not name its close", fig.Status, err)
	}
	refusal(CloseOptions{Month: oct, Who: "bob"}, "already closed", "carol")
	prooftest.WithDB(t, h.DB, func(db *sql.DB) {
		var n int
		var final, sha string
		if err := db.QueryRow(`SELECT count(*), any_value(c.final_workbook), any_value(c.final_sha256) FROM closed_months m JOIN month_closes c USING (id)`).Scan(&n, &final, &sha); err != nil {
			t.Fatal(err)
		}
		if got, _ := atomicfile.SHA256(second); n != 1 || final != second || sha != got {
			t.Fatalf("closed months %d, current final %s (sha256 %s), want %s (sha256 %s)", n, final, sha, second, got)
		}
		var actions string
		if err := db.QueryRow(`SELECT string_agg(action || ' by ' || who || ': ' || reason, '; ' ORDER BY acted_at, action) FROM month_closes`).Scan(&actions); err != nil {
			t.Fatal(err)
		}
		if actions != "close by alice: done; reopen by bob: credit note; close by carol: credit note booked" {
			t.Fatalf("history %q", actions)
		}
		// A refusal touches nothing: the runs are the close, the reopen
		// and the close.
		var runs string
		if err := db.QueryRow(`SELECT string_agg(status, ',' ORDER BY started) FROM runs WHERE command = 'close'`).Scan(&runs); err != nil {
			t.Fatal(err)
		}
		if runs != "ok,ok,ok" {
			t.Fatalf("close runs %q, want ok,ok,ok: a refusal left a run behind", runs)
		}
	})
}

// TestCloseStepClosesAfterCloseAfter: the nightly job's close step closes
// the previous month once reports.close_after has passed, naming the job,
// and leaves it alone on the next run.
func TestCloseStepClosesAfterCloseAfter(t *testing.T) {
	h := runtest.NewHarness(t, runtest.Setup{Granularity: tally.Day, Start: "2026-10-01", Now: "2026-11-01T03:00:00Z"})
	h.Runner.Config.Reports.CloseAfter = 2 * 24 * time.Hour
	job := configs.Job{Name: "nightly", Run: []string{"fetch", "report", "close"}}
	ctx := context.Background()
	if _, err := h.Runner.RunJob(ctx, "run", job); err != nil {
		t.Fatal(err)
	}
	final := reports.FinalPath(h.Runner.Config.Reports.Dir, prooftest.Day(t, "2026-10-01"), "", 1)
	if _, err := os.Stat(final); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("closed before reports.close_after passed: %v", err)
	}
	h.Clock.Set(time.Date(2026, 11, 3, 3, 0, 0, 0, time.UTC))
	for range 2 {
		sum, err := h.Runner.RunJob(ctx, "run", job)
		if err != nil {
			t.Fatal(err)
		}
		_ = sum
	}
	if _, err := os.Stat(final); err != nil {
		t.Fatal(err)
	}
	prooftest.WithDB(t, h.DB, func(db *sql.DB) {
		var n int
		var who string
		if err := db.QueryRow(`SELECT count(*), any_value(who) FROM month_closes`).Scan(&n, &who); err != nil {
			t.Fatal(err)
		}
		if n != 1 || who != "nightly" {
			t.Fatalf("month_closes: %d rows by %q, want 1 by nightly", n, who)
		}
	})
}

// The nightly close step of a group (organizations:) closes every
// organization at once, each with its own final and the group's; a month
// in which someone then reopened an organization by hand is theirs, and
// the step leaves it alone.
func TestCloseStepOfAGroup(t *testing.T) {
	h := runtest.NewHarness(t, runtest.Setup{Granularity: tally.Day, Start: "2026-10-01", Now: "2026-11-03T03:00:00Z",
		Extra: "organizations:\n  - name: solo\n    token_env: TALLY_TEST_TOKEN_SOLO\n"})
	h.Runner.Token, h.Runner.Tokens = secret.Value{}, map[string]secret.Value{"solo": secret.New(runtest.Token)}
	h.Runner.Config.Reports.CloseAfter = 2 * 24 * time.Hour
	job := configs.Job{Name: "nightly", Run: []string{"fetch", "close"}}
	ctx := context.Background()
	if _, err := h.Runner.RunJob(ctx, "run", job); err != nil {
		t.Fatal(err)
	}
	oct, dir := prooftest.Day(t, "2026-10-01"), h.Runner.Config.Reports.Dir
	for _, final := range []string{reports.FinalPath(dir, oct, "", 1), reports.FinalPath(dir, oct, "solo", 1)} {
		if _, err := os.Stat(final); err != nil {
			t.Errorf("the close step's final: %v", err)
		}
	}
	closes := func() string {
		var got string
		prooftest.WithDB(t, h.DB, func(db *sql.DB) {
			if err := db.QueryRow(`SELECT string_agg(coalesce(organization, '(group)') || ' ' || action || ' by ' || who, ', ' ORDER BY acted_at, action, organization NULLS LAST) FROM month_closes`).Scan(&got); err != nil {
				t.Fatal(err)
			}
		})
		return got
	}
	if got, want := closes(), "solo close by nightly, (group) close by nightly"; got != want {
		t.Fatalf("month_closes after the close step: %s, want %s", got, want)
	}
	if _, err := Close(ctx, h.Runner, h.Runner.Config, CloseOptions{Month: oct, Org: "solo", Reopen: true, Reason: "late credit", Who: "ann"}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Runner.RunJob(ctx, "run", job); err != nil {
		t.Fatal(err)
	}
	if got, want := closes(), "solo close by nightly, (group) close by nightly, solo reopen by ann"; got != want {
		t.Fatalf("month_closes after a reopen by hand and the close step: %s, want %s", got, want)
	}
}
