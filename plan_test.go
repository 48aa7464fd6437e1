package tally

import (
	"fmt"
	"math/rand"
	"strings"
	"testing"
	"time"
)

func date(s string) time.Time {
	t, err := ParseDate(s)
	if err != nil {
		panic(err)
	}
	return t
}

func TestParseWindowSize(t *testing.T) {
	good := map[string]WindowSize{
		"":      {},
		"7d":    {7, 'd'},
		"2w":    {2, 'w'},
		"1m":    {1, 'm'},
		"1y":    {1, 'y'},
		"365d":  {365, 'd'},
		"9999y": {9999, 'y'},
		"07d":   {7, 'd'},
	}
	for s, want := range good {
		got, err := ParseWindowSize(s)
		if err != nil || got != want {
			t.Errorf("ParseWindowSize(%q) = %v, %v; want %v", s, got, err, want)
		}
		if err == nil && s != "07d" && got.String() != s {
			t.Errorf("ParseWindowSize(%q).String() = %q", s, got.String())
		}
	}
	for _, s := range []string{"d", "0d", "-1d", "+1d", "1", "1h", "1D", " 1d", "1d ", "1.5d", "10000d", "99999999999999999999d", "1dd", "w1"} {
		if got, err := ParseWindowSize(s); err == nil {
			t.Errorf("ParseWindowSize(%q) = %v, want an error", s, got)
		} else if !strings.Contains(err.Error(), fmt.Sprintf("%q", s)) || !strings.Contains(err.Error(), "<n>d") {
			t.Errorf("ParseWindowSize(%q) error %q should name the value and the allowed forms", s, err)
		}
	}
	if !(WindowSize{}).IsZero() || (WindowSize{1, 'd'}).IsZero() {
		t.Error("IsZero is wrong")
	}
}

func TestWindowSizeAddTo(t *testing.T) {
	tests := []struct {
		size, from, want string
	}{
		{"", "2026-01-31", "2026-01-31"},
		{"7d", "2026-12-28", "2027-01-04"},
		{"2w", "2026-02-23", "2026-03-09"},
		{"1m", "2026-01-01", "2026-02-01"},
		{"1m", "2026-01-31", "2026-02-28"},
		{"1m", "2024-01-31", "2024-02-29"},
		{"1m", "2026-02-28", "2026-03-28"},
		{"3m", "2026-11-30", "2027-02-28"},
		{"12m", "2026-03-01", "2027-03-01"},
		{"1y", "2024-02-29", "2025-02-28"},
		{"4y", "2024-02-29", "2028-02-29"},
		{"1y", "2026-01-01", "2027-01-01"},
	}
	for _, tc := range tests {
		s, err := ParseWindowSize(tc.size)
		if err != nil {
			t.Fatal(err)
		}
		if got := s.AddTo(date(tc.from)); !got.Equal(date(tc.want)) {
			t.Errorf("%q.AddTo(%s) = %s, want %s", tc.size, tc.from, got.Format(DateLayout), tc.want)
		}
	}
}

// AddTo must never move a later start to an earlier end: the planner's
// greedy cutting is minimal only then.
func TestWindowSizeAddToMonotonic(t *testing.T) {
	for _, s := range []string{"1d", "3w", "1m", "2m", "12m", "1y", "3y"} {
		size, _ := ParseWindowSize(s)
		prev := size.AddTo(date("2023-01-01"))
		for d := date("2023-01-02"); d.Before(date("2029-01-01")); d = d.AddDate(0, 0, 1) {
			got := size.AddTo(d)
			if got.Before(prev) {
				t.Fatalf("%s.AddTo(%s) = %s is before the previous day's %s", s, d.Format(DateLayout), got.Format(DateLayout), prev.Format(DateLayout))
			}
			if !got.After(d) {
				t.Fatalf("%s.AddTo(%s) = %s does not move forward", s, d.Format(DateLayout), got.Format(DateLayout))
			}
			prev = got
		}
	}
}

func TestCheckWindowSize(t *testing.T) {
	ok := map[Granularity][]string{
		Hour:  {"", "1d", "31d", "1w", "4w", "1m"},
		Day:   {"", "1d", "365d", "52w", "1m", "12m", "1y"},
		Week:  {"", "1w", "2w", "520w"},
		Month: {"", "1m", "3m", "24m", "1y", "5y"},
		Year:  {"", "1y", "10y"},
	}
	bad := map[Granularity][]string{
		Hour:  {"32d", "5w", "2m", "1y"},
		Day:   {"366d", "53w", "13m", "2y"},
		Week:  {"7d", "14d", "1m", "1y"},
		Month: {"30d", "4w"},
		Year:  {"365d", "52w", "12m"},
	}
	for g, sizes := range ok {
		for _, s := range sizes {
			size, err := ParseWindowSize(s)
			if err != nil {
				t.Fatal(err)
			}
			if err := CheckWindowSize(g, size); err != nil {
				t.Errorf("CheckWindowSize(%s, %q) = %v, want nil", g, s, err)
			}
		}
	}
	for g, sizes := range bad {
		for _, s := range sizes {
			size, err := ParseWindowSize(s)
			if err != nil {
				t.Fatal(err)
			}
			err = CheckWindowSize(g, size)
			if err == nil {
				t.Errorf("CheckWindowSize(%s, %q) = nil, want an error", g, s)
				continue
			}
			if msg := err.Error(); !strings.Contains(msg, fmt.Sprintf("%q", s)) || !strings.Contains(msg, string(g)) || !strings.Contains(msg, "e.g.") {
				t.Errorf("CheckWindowSize(%s, %q) error %q should name the value, the granularity and what is allowed", g, s, msg)
			}
		}
	}
	if err := CheckWindowSize("hourly", WindowSize{}); err == nil {
		t.Error("CheckWindowSize accepted an invalid granularity")
	}
	if err := CheckWindowSize(Day, WindowSize{0, 'd'}); err == nil {
		t.Error("CheckWindowSize accepted N = 0 with a unit")
	}
}

func formatPlan(ws []PlannedWindow) string {
	var b strings.Builder
	for _, w := range ws {
		fmt.Fprintf(&b, "%s %s %s\n", w.Window, w.Granularity, w.Reason)
	}
	return b.String()
}

func TestPlanExamples(t *testing.T) {
	h := time.Hour
	tests := []struct {
		name string
		in   PlanInput
		want string
	}{
		{
			name: "81 hourly days make 31+31+19",
			in:   PlanInput{From: date("2026-01-01"), To: date("2026-03-23"), Granularity: Hour, Lookback: 7 * 24 * h, Now: date("2026-03-22").Add(10 * h)},
			want: "2026-01-01..2026-02-01 hour backfill\n2026-02-01..2026-03-04 hour backfill\n2026-03-04..2026-03-23 hour backfill\n",
		},
		{
			name: "day windows from a leap day",
			in:   PlanInput{From: date("2024-02-29"), To: date("2026-03-10"), Granularity: Day, Now: date("2026-03-09")},
			want: "2024-02-29..2025-02-28 day backfill\n2025-02-28..2026-02-28 day backfill\n2026-02-28..2026-03-10 day backfill\n",
		},
		{
			name: "day windows with a one-year size from a leap day",
			in:   PlanInput{From: date("2024-02-29"), To: date("2025-03-10"), Granularity: Day, Size: WindowSize{1, 'y'}, Now: date("2025-03-09")},
			want: "2024-02-29..2025-02-28 day backfill\n2025-02-28..2025-03-10 day backfill\n",
		},
		{
			name: "week edges widen to Mondays",
			in:   PlanInput{From: date("2026-01-07"), To: date("2026-02-04"), Granularity: Week, Now: date("2026-06-01")},
			want: "2026-01-05..2026-02-09 week backfill\n",
		},
		{
			name: "month and year edges widen",
			in:   PlanInput{From: date("2025-11-15"), To: date("2026-02-02"), Granularity: Month, Size: WindowSize{2, 'm'}, Now: date("2027-01-01")},
			want: "2025-11-01..2026-01-01 month backfill\n2026-01-01..2026-03-01 month backfill\n",
		},
		{
			name: "year",
			in:   PlanInput{From: date("2020-06-01"), To: date("2026-06-01"), Granularity: Year, Now: date("2026-05-01")},
			want: "2020-01-01..2027-01-01 year backfill\n",
		},
		{
			name: "a size shorter than the limit",
			in:   PlanInput{From: date("2026-01-01"), To: date("2026-01-20"), Granularity: Hour, Size: WindowSize{1, 'w'}, Now: date("2026-01-19")},
			want: "2026-01-01..2026-01-08 hour backfill\n2026-01-08..2026-01-15 hour backfill\n2026-01-15..2026-01-20 hour backfill\n",
		},
		{
			name: "loaded and complete: only the lookback, today included",
			in: PlanInput{From: date("2026-01-01"), To: date("2026-03-01"), Granularity: Day, Lookback: 7 * 24 * h, Now: date("2026-02-28").Add(3 * h),
				Loaded: []LoadedWindow{{Window{date("2026-01-01"), date("2026-03-01"), Day}, date("2026-03-01")}}},
			want: "2026-02-21..2026-03-01 day lookback\n",
		},
		{
			name: "lookback of 36 hours widens to whole days",
			in: PlanInput{From: date("2026-01-01"), To: date("2026-03-01"), Granularity: Hour, Lookback: 36 * h, Now: date("2026-02-28").Add(3 * h),
				Loaded: []LoadedWindow{{Window{date("2026-01-01"), date("2026-01-31"), Hour}, date("2026-03-01")}, {Window{date("2026-01-31"), date("2026-03-01"), Hour}, date("2026-03-01")}}},
			want: "2026-02-26..2026-03-01 hour lookback\n",
		},
		{
			name: "lookback zero still fetches today",
			in: PlanInput{From: date("2026-01-01"), To: date("2026-03-01"), Granularity: Day, Now: date("2026-02-10").Add(23 * h),
				Loaded: []LoadedWindow{{Window{date("2026-01-01"), date("2026-03-01"), Day}, date("2026-03-01")}}},
			want: "2026-02-10..2026-03-01 day lookback\n",
		},
		{
			name: "a month's lookback widens to the previous month",
			in: PlanInput{From: date("2025-01-01"), To: date("2026-03-01"), Granularity: Month, Lookback: 7 * 24 * h, Now: date("2026-02-03"),
				Loaded: []LoadedWindow{{Window{date("2025-01-01"), date("2026-03-01"), Month}, date("2026-03-02")}}},
			want: "2026-01-01..2026-03-01 month lookback\n",
		},
		{
			name: "a gap is missing and merges with the lookback",
			in: PlanInput{From: date("2026-01-01"), To: date("2026-03-01"), Granularity: Day, Lookback: 2 * 24 * h, Now: date("2026-02-27"),
				Loaded: []LoadedWindow{
					{Window{date("2026-01-01"), date("2026-01-10"), Day}, date("2026-02-01")},
					{Window{date("2026-01-20"), date("2026-02-20"), Day}, date("2026-02-21")},
					{Window{date("2026-02-20"), date("2026-03-01"), Day}, date("2026-03-01")},
				}},
			want: "2026-01-10..2026-01-20 day missing\n2026-02-25..2026-03-01 day lookback\n",
		},
		{
			name: "a window fetched before it ended is partial from the fetch day on",
			in: PlanInput{From: date("2026-01-01"), To: date("2026-03-01"), Granularity: Day, Now: date("2026-02-27"),
				Loaded: []LoadedWindow{
					{Window{date("2026-01-01"), date("2026-02-01"), Day}, date("2026-01-20").Add(5 * h)},
					{Window{date("2026-02-01"), date("2026-03-01"), Day}, date("2026-03-01")},
				}},
			want: "2026-01-20..2026-02-01 day partial\n2026-02-27..2026-03-01 day lookback\n",
		},
		{
			name: "a unit fetched again after it ended is complete",
			in: PlanInput{From: date("2026-01-01"), To: date("2026-02-01"), Granularity: Day, Now: date("2026-06-01"),
				Loaded: []LoadedWindow{
					{Window{date("2026-01-01"), date("2026-02-01"), Day}, date("2026-01-10")},
					{Window{date("2026-01-09"), date("2026-01-20"), Day}, date("2026-01-25")},
				}},
			want: "2026-01-20..2026-02-01 day partial\n",
		},
		{
			name: "the reason of a merged window is its highest",
			in: PlanInput{From: date("2026-01-01"), To: date("2026-02-01"), Granularity: Day, Lookback: 10 * 24 * h, Now: date("2026-01-25"),
				Loaded: []LoadedWindow{
					{Window{date("2026-01-01"), date("2026-01-20"), Day}, date("2026-01-19")},
					{Window{date("2026-01-21"), date("2026-02-01"), Day}, date("2026-02-02")},
				}},
			want: "2026-01-15..2026-02-01 day missing\n",
		},
		{
			name: "windows of another granularity are ignored",
			in: PlanInput{From: date("2026-01-01"), To: date("2026-01-10"), Granularity: Day, Now: date("2026-05-01"),
				Loaded: []LoadedWindow{{Window{date("2026-01-01"), date("2026-01-10"), Hour}, date("2026-02-01")}}},
			want: "2026-01-01..2026-01-10 day backfill\n",
		},
		{
			name: "a loaded window off unit edges does not count as covering",
			in: PlanInput{From: date("2026-01-01"), To: date("2026-03-01"), Granularity: Month, Now: date("2026-06-01"),
				Loaded: []LoadedWindow{{Window{date("2026-01-05"), date("2026-03-01"), Month}, date("2026-04-01")}}},
			want: "2026-01-01..2026-02-01 month missing\n",
		},
		{
			name: "nothing due",
			in: PlanInput{From: date("2025-01-01"), To: date("2025-02-01"), Granularity: Day, Lookback: 7 * 24 * h, Now: date("2026-01-01"),
				Loaded: []LoadedWindow{{Window{date("2024-12-01"), date("2025-03-01"), Day}, date("2025-04-01")}}},
			want: "",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Plan(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if s := formatPlan(got); s != tc.want {
				t.Errorf("got\n%swant\n%s", s, tc.want)
			}
			for _, w := range got {
				if err := w.Validate(); err != nil {
					t.Error(err)
				}
			}
		})
	}
}

func TestPlanErrors(t *testing.T) {
	now := date("2026-01-01")
	tests := []struct {
		name string
		in   PlanInput
		want string
	}{
		{"from equals to", PlanInput{From: now, To: now, Granularity: Day, Now: now}, "must be before"},
		{"from after to", PlanInput{From: now, To: now.AddDate(0, 0, -1), Granularity: Day, Now: now}, "must be before"},
		{"granularity", PlanInput{From: now, To: now.AddDate(0, 0, 1), Granularity: "hourly", Now: now}, `"hourly" is not one of`},
		{"size", PlanInput{From: now, To: now.AddDate(0, 0, 1), Granularity: Hour, Size: WindowSize{2, 'm'}, Now: now}, `"2m" is not allowed`},
		{"lookback", PlanInput{From: now, To: now.AddDate(0, 0, 1), Granularity: Day, Lookback: -time.Hour, Now: now}, "negative"},
		{"now", PlanInput{From: now, To: now.AddDate(0, 0, 1), Granularity: Day}, "now"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Plan(tc.in)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Plan error = %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// randomPlanInput makes a random range, ledger, size, lookback and now for
// granularity g.
func randomPlanInput(r *rand.Rand, g Granularity, withLedger bool) PlanInput {
	base := date("2023-01-01").AddDate(0, 0, r.Intn(4*366))
	var span int // days
	switch g {
	case Hour:
		span = 1 + r.Intn(200)
	case Day:
		span = 1 + r.Intn(1500)
	default:
		span = 1 + r.Intn(3000)
	}
	in := PlanInput{
		From:        base,
		To:          base.AddDate(0, 0, span),
		Granularity: g,
		Lookback:    time.Duration(r.Intn(24*60)) * time.Hour,
		Now:         base.AddDate(0, 0, r.Intn(span+60)-30).Add(time.Duration(r.Intn(24*3600)) * time.Second),
	}
	if r.Intn(3) > 0 {
		units := []byte("dwmy")
		for {
			s := WindowSize{1 + r.Intn(40), units[r.Intn(4)]}
			if r.Intn(2) == 0 {
				s.N = 1 + r.Intn(3)
			}
			if CheckWindowSize(g, s) == nil {
				in.Size = s
				break
			}
		}
	}
	if !withLedger {
		return in
	}
	u := g.WindowUnit()
	for n := r.Intn(8); n > 0; n-- {
		lg := g
		if r.Intn(10) == 0 {
			lg = Granularities[r.Intn(len(Granularities))]
		}
		s := u.Truncate(in.From.AddDate(0, 0, r.Intn(span+40)-20))
		e := s
		for k := 1 + r.Intn(12); k > 0; k-- {
			e = u.Next(e)
		}
		if r.Intn(8) == 0 && u == Day { // off-edge windows must never create gaps
			s = s.Add(time.Hour)
		}
		fetched := e.Add(time.Duration(r.Intn(30*24)-20*24) * time.Hour)
		in.Loaded = append(in.Loaded, LoadedWindow{Window{s, e, lg}, fetched})
	}
	return in
}

// expectedDue is an independent statement of which units are due and why.
func expectedDue(in PlanInput) (units []time.Time, reasons []string) {
	u := in.Granularity.WindowUnit()
	start := u.Truncate(in.From)
	end := u.Truncate(in.To)
	if end.Before(in.To) {
		end = u.Next(end)
	}
	anyLoaded := false
	for _, lw := range in.Loaded {
		anyLoaded = anyLoaded || lw.Granularity == in.Granularity
	}
	today := u.Truncate(in.Now)
	refetch := u.Truncate(in.Now.Add(-in.Lookback))
	for t := start; t.Before(end); t = u.Next(t) {
		next := u.Next(t)
		covered, fresh := false, false
		for _, lw := range in.Loaded {
			if lw.Granularity == in.Granularity && !lw.Start.After(t) && !lw.End.Before(next) {
				covered = true
				fresh = fresh || !lw.FetchedAt.Before(next)
			}
		}
		reason := ""
		switch {
		case !covered && !anyLoaded:
			reason = ReasonBackfill
		case !covered:
			reason = ReasonMissing
		case !fresh:
			reason = ReasonPartial
		case !t.Before(refetch) || t.Equal(today):
			reason = ReasonLookback
		}
		units = append(units, t)
		reasons = append(reasons, reason)
	}
	return units, reasons
}

// windowLimit is the farthest end a window starting at s may have.
func windowLimit(g Granularity, size WindowSize, s time.Time) (time.Time, bool) {
	limit, ok := g.MaxEnd(s)
	if !size.IsZero() {
		e := size.AddTo(s)
		if !ok || e.Before(limit) {
			limit, ok = e, true
		}
	}
	return limit, ok
}

// minWindows is the fewest windows that cover units[i:j] exactly, found by
// dynamic programming over every possible cut.
func minWindows(g Granularity, size WindowSize, units []time.Time, i, j int) int {
	n := j - i
	reach := make([]int, n) // the farthest cut a window starting at unit i+s may reach
	for s := 0; s < n; s++ {
		limit, ok := windowLimit(g, size, units[i+s])
		reach[s] = s + 1
		for reach[s] < n && (!ok || !units[i+reach[s]+1].After(limit)) {
			reach[s]++
		}
	}
	best := make([]int, n+1) // fewest windows covering the first k units
	for k := 1; k <= n; k++ {
		best[k] = 1 << 30
	}
	for s := 0; s < n; s++ {
		for k := s + 1; k <= reach[s]; k++ {
			best[k] = min(best[k], best[s]+1)
		}
	}
	return best[n]
}

func checkPlan(t *testing.T, in PlanInput, got []PlannedWindow) {
	t.Helper()
	units, reasons := expectedDue(in)
	u := in.Granularity.WindowUnit()
	at := map[time.Time]int{}
	for i, s := range units {
		at[s] = i
	}
	units = append(units, u.Next(units[len(units)-1]))
	owner := make([]int, len(reasons)) // window index+1 covering each unit
	for wi, w := range got {
		if err := w.Validate(); err != nil {
			t.Fatalf("window %d: %v", wi, err)
		}
		if w.Granularity != in.Granularity {
			t.Fatalf("window %s has granularity %s", w.Window, w.Granularity)
		}
		if wi > 0 && w.Start.Before(got[wi-1].End) {
			t.Fatalf("window %s overlaps or precedes %s", w.Window, got[wi-1].Window)
		}
		if limit, ok := windowLimit(in.Granularity, in.Size, w.Start); ok && w.End.After(limit) {
			t.Fatalf("window %s is larger than allowed (size %q): limit %s", w.Window, in.Size, limit.Format(DateLayout))
		}
		first, ok := at[w.Start]
		if !ok {
			t.Fatalf("window %s starts outside the planned range", w.Window)
		}
		want := ""
		i := first
		for ; i < len(reasons) && units[i].Before(w.End); i++ {
			if reasons[i] == "" {
				t.Fatalf("window %s holds %s, which is not due", w.Window, units[i].Format(DateLayout))
			}
			owner[i] = wi + 1
			if reasonRank[reasons[i]] > reasonRank[want] {
				want = reasons[i]
			}
		}
		if !units[i].Equal(w.End) {
			t.Fatalf("window %s ends outside the planned range", w.Window)
		}
		if w.Reason != want {
			t.Fatalf("window %s has reason %q, want %q", w.Window, w.Reason, want)
		}
	}
	// Every due unit is covered, and each run of due units uses the fewest
	// windows possible.
	for i := 0; i < len(reasons); {
		if reasons[i] == "" {
			i++
			continue
		}
		j := i
		for j < len(reasons) && reasons[j] != "" {
			if owner[j] == 0 {
				t.Fatalf("due unit %s (%s) is not fetched", units[j].Format(DateLayout), reasons[j])
			}
			j++
		}
		n := owner[j-1] - owner[i] + 1
		if want := minWindows(in.Granularity, in.Size, units, i, j); n != want {
			t.Fatalf("run %s..%s uses %d windows, the fewest is %d", units[i].Format(DateLayout), units[j].Format(DateLayout), n, want)
		}
		i = j
	}
}

func TestPlanProperties(t *testing.T) {
	for _, g := range Granularities {
		for seed := int64(1); seed <= 300; seed++ {
			r := rand.New(rand.NewSource(seed*31 + int64(len(g))))
			in := randomPlanInput(r, g, seed%5 != 0)
			got, err := Plan(in)
			if err != nil {
				t.Fatalf("%s seed %d: %v", g, seed, err)
			}
			t.Run(fmt.Sprintf("%s/%d", g, seed), func(t *testing.T) { checkPlan(t, in, got) })
		}
	}
}

// With nothing loaded, the plan covers [From, To) widened to unit edges with
// no gap, and the window count follows from the range limit alone.
func TestPlanEmptyLedgerCount(t *testing.T) {
	r := rand.New(rand.NewSource(7))
	for i := 0; i < 500; i++ {
		g := Granularities[i%len(Granularities)]
		in := randomPlanInput(r, g, false)
		in.Size = WindowSize{}
		got, err := Plan(in)
		if err != nil {
			t.Fatal(err)
		}
		u := g.WindowUnit()
		start, end := u.Truncate(in.From), u.Truncate(in.To)
		if end.Before(in.To) {
			end = u.Next(end)
		}
		if !got[0].Start.Equal(start) || !got[len(got)-1].End.Equal(end) {
			t.Fatalf("%s %s..%s: plan spans %s..%s", g, in.From.Format(DateLayout), in.To.Format(DateLayout), got[0].Start.Format(DateLayout), got[len(got)-1].End.Format(DateLayout))
		}
		for k := 1; k < len(got); k++ {
			if !got[k].Start.Equal(got[k-1].End) {
				t.Fatalf("gap between %s and %s", got[k-1].Window, got[k].Window)
			}
		}
		for _, w := range got {
			if w.Reason != ReasonBackfill {
				t.Fatalf("window %s reason %q, want backfill", w.Window, w.Reason)
			}
		}
		days := int(end.Sub(start).Hours() / 24)
		var want int
		switch g {
		case Hour:
			want = (days + 30) / 31
		case Day:
			// Whole years from the start, then the rest.
			want = 0
			for s := start; s.Before(end); s = s.AddDate(1, 0, 0) {
				want++
			}
		default:
			want = 1
		}
		if len(got) != want {
			t.Fatalf("%s %d days: %d windows, want %d\n%s", g, days, len(got), want, formatPlan(got))
		}
	}
}

// Today's unit is always due and the whole lookback span is always fetched
// again, however complete the ledger is.
func TestPlanAlwaysRefetchesLookback(t *testing.T) {
	r := rand.New(rand.NewSource(11))
	for i := 0; i < 400; i++ {
		g := Granularities[i%len(Granularities)]
		in := randomPlanInput(r, g, false)
		u := g.WindowUnit()
		start := u.Truncate(in.From)
		end := u.Truncate(in.To)
		if end.Before(in.To) {
			end = u.Next(end)
		}
		// A ledger that holds everything, fetched long after.
		in.Loaded = []LoadedWindow{{Window{start.AddDate(-1, 0, 0), end.AddDate(1, 0, 0), g}, end.AddDate(2, 0, 0)}}
		got, err := Plan(in)
		if err != nil {
			t.Fatal(err)
		}
		refetch := u.Truncate(in.Now.Add(-in.Lookback))
		if refetch.Before(start) {
			refetch = start
		}
		if !refetch.Before(end) {
			if len(got) != 0 {
				t.Fatalf("lookback ends before the range, yet planned:\n%s", formatPlan(got))
			}
			continue
		}
		if len(got) == 0 || !got[0].Start.Equal(refetch) || !got[len(got)-1].End.Equal(end) {
			t.Fatalf("%s now %s lookback %s: want %s..%s, got\n%s", g, in.Now, in.Lookback, refetch.Format(DateLayout), end.Format(DateLayout), formatPlan(got))
		}
		today := u.Truncate(in.Now)
		found := !today.Before(start) && today.Before(end)
		for _, w := range got {
			if w.Reason != ReasonLookback {
				t.Fatalf("window %s reason %q, want lookback", w.Window, w.Reason)
			}
			if w.Contains(today) {
				found = false
			}
		}
		if found {
			t.Fatalf("today %s is in range but not planned:\n%s", today.Format(DateLayout), formatPlan(got))
		}
	}
}

// Loading what the plan says, after it has all ended, and planning again
// leaves only the lookback.
func TestPlanConverges(t *testing.T) {
	r := rand.New(rand.NewSource(5))
	for i := 0; i < 200; i++ {
		g := Granularities[i%len(Granularities)]
		in := randomPlanInput(r, g, true)
		first, err := Plan(in)
		if err != nil {
			t.Fatal(err)
		}
		later := in.To.AddDate(2, 0, 0) // every planned unit has ended by then
		for _, w := range first {
			in.Loaded = append(in.Loaded, LoadedWindow{w.Window, later})
		}
		second, err := Plan(in)
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range second {
			if w.Reason != ReasonLookback {
				t.Fatalf("after loading the plan, %s is still %s", w.Window, w.Reason)
			}
		}
	}
}
