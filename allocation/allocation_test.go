package allocation

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/tally-dev/tally"
	"github.com/tally-dev/tally/fetch/sim"
	"github.com/tally-dev/tally/internal/testkit/chargebackcheck"
	"github.com/tally-dev/tally/internal/testkit/storetest"
	"github.com/tally-dev/tally/store"
)

func monthOf(t *testing.T, s string) time.Time {
	m, err := time.Parse("2006-01", s)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

type chargebackFixture struct {
	s    *store.Store
	srv  *sim.Server
	rows map[string][]tally.MeterData // month (YYYY-MM) → the sim's rows
}

func newChargebackFixture(t *testing.T) *chargebackFixture {
	now := time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)
	f := &chargebackFixture{s: storetest.Open(t), srv: sim.New(sim.Options{Seed: 7, Start: storetest.Date(t, "2026-08-01"), Now: func() time.Time { return now }}), rows: map[string][]tally.MeterData{}}
	for _, m := range chargebackcheck.Months {
		q := tally.UsageQuery{Window: storetest.Window(t, tally.Day, m[0], m[1])}
		rows := f.srv.Rows(q)
		storetest.Load(t, f.s, q, rows...)
		f.rows[m[0][:7]] = rows
	}
	return f
}

// centreTotals reads cost_centre_monthly_cost for a month: "USD|News" → total.
func (f *chargebackFixture) centreTotals(t *testing.T, month string) map[string]tally.Decimal {
	out := map[string]tally.Decimal{}
	for _, r := range storetest.RowsText(t, f.s, fmt.Sprintf(`SELECT currency || '|' || cost_centre, CAST(total AS VARCHAR) FROM cost_centre_monthly_cost
WHERE basis = 'usage' AND month = DATE '%s-01' ORDER BY ALL`, month)) {
		k, v := splitBar(r)
		out[k] = tally.MustDecimal(v)
	}
	return out
}

func splitBar(r string) (string, string) {
	for i := len(r) - 1; i >= 0; i-- {
		if r[i] == '|' {
			return r[:i], r[i+1:]
		}
	}
	return r, ""
}

// Every method, against the sim's rows split by the rules as the docs
// state them (chargebackcheck.Split): each cost centre's month, to the last
// digit; the parts of every shared charge add up to it; cost centres plus
// Unallocated are the month's truth per currency.
func TestCostAllocationMatchesTheSplitOfTheTruth(t *testing.T) {
	ctx := context.Background()
	f := newChargebackFixture(t)
	a := chargebackcheck.Rules()
	if err := Set(ctx, f.s, a); err != nil {
		t.Fatal(err)
	}
	for _, m := range chargebackcheck.Months {
		month := m[0][:7]
		want := chargebackcheck.Totals(chargebackcheck.Split(f.rows[month], a, monthOf(t, month)))
		got := f.centreTotals(t, month)
		if d := sameTotals(got, want); d != "" {
			t.Errorf("%s: cost centres differ from the split of the truth: %s", month, d)
		}
		truth := f.srv.Truth(tally.UsageQuery{Window: storetest.Window(t, tally.Day, m[0], m[1])}).Cost
		perCurrency := map[string]tally.Decimal{}
		for k, v := range got {
			cur, _, _ := cutBar(k)
			perCurrency[cur] = perCurrency[cur].Add(v)
		}
		if d := sameTotals(perCurrency, truth); d != "" {
			t.Errorf("%s: cost centres plus Unallocated are not the month's truth: %s", month, d)
		}
		if _, ok := got["USD|"+tally.Unallocated]; !ok {
			t.Errorf("%s: training's unshared cost is not Unallocated: %v", month, got)
		}
	}
	// The parts of every charge add up to it, exactly.
	if bad := storetest.RowsText(t, f.s, `SELECT month, currency, origin_project, origin_meter, paid_as, any_value(origin_cost), sum(amount)
FROM cost_allocation GROUP BY month, currency, origin_project, origin_meter, origin_family, origin_payment_method, paid_as
HAVING sum(amount) <> any_value(origin_cost) OR count(DISTINCT origin_cost) <> 1`); len(bad) > 0 {
		t.Errorf("charges whose parts do not add up: %v", bad)
	}
	// Every method was applied, and the driver nobody used says how it fell back.
	if got := storetest.Strings(t, f.s, `SELECT DISTINCT method FROM cost_allocation ORDER BY 1`); !slices.Equal(got, []string{"direct", "driver", "even", "fixed", "proportional", "unallocated"}) {
		t.Errorf("methods applied: %v", got)
	}
	notes := storetest.Strings(t, f.s, `SELECT DISTINCT rule_version || ': ' || note FROM cost_allocation WHERE note IS NOT NULL ORDER BY 1`)
	var wantNotes []string
	for _, m := range chargebackcheck.Months {
		wantNotes = append(wantNotes, "uhd@2026-08: no receiver used driver meter transcode_minutes in "+m[0][:7]+"; split proportional to own usage value instead")
	}
	if !slices.Equal(notes, wantNotes) {
		t.Errorf("fallback notes:\n got %q\nwant %q", notes, wantNotes)
	}
	// The paid-as split is kept on every line: per paid-as, the lines add
	// up to the month's rows of that paid-as.
	storetest.EqualLines(t, "paid-as kept",
		storetest.RowsText(t, f.s, `SELECT month, currency, paid_as, sum(amount) FROM cost_allocation GROUP BY ALL ORDER BY ALL`),
		storetest.RowsText(t, f.s, `SELECT CAST(date_trunc('month', date) AS DATE), currency, paid_as, sum(cost) FROM usage_rows GROUP BY ALL ORDER BY ALL`))
}

func cutBar(k string) (string, string, bool) {
	for i := 0; i < len(k); i++ {
		if k[i] == '|' {
			return k[:i], k[i+1:], true
		}
	}
	return k, "", false
}

// A rule changed from a later month leaves the earlier months as they
// were; a closed month keeps the rules it closed under, whatever the
// config says later, and its fingerprint holds their hash.
func TestRuleChangesLeaveThePastAndClosedMonths(t *testing.T) {
	ctx := context.Background()
	f := newChargebackFixture(t)
	a := chargebackcheck.Rules()
	if err := Set(ctx, f.s, a); err != nil {
		t.Fatal(err)
	}
	lines := func(month string) []string {
		return storetest.RowsText(t, f.s, fmt.Sprintf(`SELECT * EXCLUDE (month) FROM cost_allocation WHERE month = DATE '%s-01' ORDER BY ALL`, month))
	}
	aug, sep, oct := lines("2026-08"), lines("2026-09"), lines("2026-10")

	// From October, training's storage goes to Sport alone.
	later := a
	later.Rules = append(slices.Clone(a.Rules), tally.AllocationRule{Name: "training storage", From: monthOf(t, "2026-10"), Projects: []string{"training"},
		Meters: []string{"storage_gb_hours"}, Receivers: []string{"Sport"}, Method: tally.AllocateFixed, Percent: []tally.Decimal{tally.MustDecimal("100")}})
	if err := Set(ctx, f.s, later); err != nil {
		t.Fatal(err)
	}
	storetest.EqualLines(t, "August after a change from October", lines("2026-08"), aug)
	storetest.EqualLines(t, "September after a change from October", lines("2026-09"), sep)
	if slices.Equal(lines("2026-10"), oct) {
		t.Fatal("October did not change with a rule from October")
	}
	wantOct := chargebackcheck.Totals(chargebackcheck.Split(f.rows["2026-10"], later, monthOf(t, "2026-10")))
	if d := sameTotals(f.centreTotals(t, "2026-10"), wantOct); d != "" {
		t.Errorf("October under the new entry: %s", d)
	}

	// September is closed under these rules; then the rules change from
	// August: August follows, September does not.
	sepClose := store.MonthClose{ID: uuid.Must(uuid.NewV7()), Month: monthOf(t, "2026-09"), Basis: tally.BasisUsage, Granularity: tally.Day,
		At: time.Date(2026, 10, 5, 0, 0, 0, 0, time.UTC), Who: "finance", ContentHash: "h", FinalWorkbook: "/x/final.xlsx", Allocation: later}
	if err := f.s.RecordClose(ctx, sepClose, nil); err != nil {
		t.Fatal(err)
	}
	var hash string
	if err := f.s.DB().QueryRowContext(ctx, `SELECT allocation_hash FROM month_closes WHERE id = ?`, sepClose.ID).Scan(&hash); err != nil || hash != later.Hash(sepClose.Month) {
		t.Fatalf("allocation_hash %q (%v), want %q", hash, err, later.Hash(sepClose.Month))
	}
	sep = lines("2026-09")
	rewritten := later
	rewritten.Rules = slices.Clone(later.Rules)
	rewritten.Rules[0].Method, rewritten.Rules[0].Receivers = tally.AllocateFixed, []string{"News"}
	rewritten.Rules[0].Percent = []tally.Decimal{tally.MustDecimal("100")}
	rewritten.CostCentres = append(slices.Clone(later.CostCentres), tally.CostCentre{Name: "Learning", Projects: []string{"training"}})
	if err := Set(ctx, f.s, rewritten); err != nil {
		t.Fatal(err)
	}
	storetest.EqualLines(t, "closed September after the rules changed", lines("2026-09"), sep)
	if slices.Equal(lines("2026-08"), aug) {
		t.Fatal("open August did not follow the changed rules")
	}
	wantAug := chargebackcheck.Totals(chargebackcheck.Split(f.rows["2026-08"], rewritten, monthOf(t, "2026-08")))
	if d := sameTotals(f.centreTotals(t, "2026-08"), wantAug); d != "" {
		t.Errorf("August under the rewritten rules: %s", d)
	}
	// Reopened, September follows the config again.
	if err := f.s.RecordReopen(ctx, store.MonthClose{ID: uuid.Must(uuid.NewV7()), Month: sepClose.Month, Basis: tally.BasisUsage, Granularity: tally.Day,
		At: sepClose.At.Add(time.Hour), Who: "finance", Reason: "late credit"}); err != nil {
		t.Fatal(err)
	}
	wantSep := chargebackcheck.Totals(chargebackcheck.Split(f.rows["2026-09"], rewritten, monthOf(t, "2026-09")))
	if d := sameTotals(f.centreTotals(t, "2026-09"), wantSep); d != "" {
		t.Errorf("reopened September: %s", d)
	}
}

// sameTotals describes how two maps of exact totals differ, "" when equal.
func sameTotals(got, want map[string]tally.Decimal) string {
	var diffs []string
	for k, w := range want {
		if g, ok := got[k]; !ok || g.Cmp(w) != 0 {
			diffs = append(diffs, fmt.Sprintf("%s: got %s, want %s", k, g, w))
		}
	}
	for k, g := range got {
		if _, ok := want[k]; !ok {
			diffs = append(diffs, fmt.Sprintf("%s: got %s, want none", k, g))
		}
	}
	slices.Sort(diffs)
	return fmt.Sprint(diffs)[1 : len(fmt.Sprint(diffs))-1]
}

// A cost centre's budget scope is its own projects, day by day: its
// daily cost and forecast are its projects' together.
func TestCostCentreBudgetScope(t *testing.T) {
	ctx := context.Background()
	f := newChargebackFixture(t)
	if err := Set(ctx, f.s, chargebackcheck.Rules()); err != nil {
		t.Fatal(err)
	}
	storetest.EqualLines(t, "News's days",
		storetest.RowsText(t, f.s, `SELECT day, currency, cost FROM scope_daily_cost WHERE scope_kind = 'cost_centre' AND scope = 'News' ORDER BY ALL`),
		storetest.RowsText(t, f.s, `SELECT day, currency, sum(cost) FROM scope_daily_cost WHERE scope_kind = 'project' AND scope IN ('newsroom', 'archive') GROUP BY ALL ORDER BY ALL`))
	storetest.EqualLines(t, "Sport's forecast",
		storetest.RowsText(t, f.s, `SELECT month, currency, actual_cost, forecast_cost FROM forecasts WHERE scope_kind = 'cost_centre' AND scope = 'Sport' ORDER BY ALL`),
		storetest.RowsText(t, f.s, `SELECT month, currency, actual_cost, forecast_cost FROM forecasts WHERE scope_kind = 'project' AND scope = 'sports-live' ORDER BY ALL`))
	if n := storetest.Count(t, f.s, `SELECT count(*) FROM forecasts WHERE scope_kind = 'cost_centre'`); n == 0 {
		t.Fatal("no cost centre forecasts")
	}
}
