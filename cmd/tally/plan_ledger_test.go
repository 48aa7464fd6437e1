package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tally-dev/tally"
	"github.com/tally-dev/tally/fetch/sim"
	"github.com/tally-dev/tally/job"
)

// plannedWindow is one window as `tally plan --format json` prints it and
// as `tally fetch` logs it: "start..end reason".
func planWindows(t *testing.T, cfg string, args ...string) []string {
	t.Helper()
	out, err := execCLI(t, "", append([]string{"plan", "--config", cfg, "--format", "json"}, args...)...)
	if err != nil {
		t.Fatalf("tally plan: %v", err)
	}
	var ws []planJSON
	if err := json.Unmarshal([]byte(out), &ws); err != nil {
		t.Fatalf("tally plan printed %q: %v", out, err)
	}
	var got []string
	for _, w := range ws {
		got = append(got, w.Start+".."+w.End+" "+w.Reason)
	}
	return got
}

// fetchWindows runs `tally fetch` and returns the windows it worked on,
// read from its JSON log, in start order, and its error.
func fetchWindows(t *testing.T, cfg string, args ...string) ([]string, error) {
	t.Helper()
	var err error
	logs := stderrOf(t, func() {
		_, err = execCLI(t, "", append([]string{"--log-format", "json", "fetch", "--config", cfg}, args...)...)
	})
	var got []string
	sc := bufio.NewScanner(strings.NewReader(logs))
	for sc.Scan() {
		var line struct{ Message, Window, Reason string }
		if json.Unmarshal(sc.Bytes(), &line) == nil && line.Message == "window" {
			got = append(got, line.Window+" "+line.Reason)
		}
	}
	slices.Sort(got)
	return got, err
}

// tally plan prints exactly the windows the next tally fetch requests,
// with the same reasons: before anything is loaded, after a window failed,
// on a later night with late charges, and after windows were split.
func TestPlanIsWhatFetchRequests(t *testing.T) {
	start := tally.Day.Truncate(time.Now().UTC()).AddDate(0, 0, -40)
	s := newCLISim(t, start)
	cfg, _ := cliConfig(t, s, start, "")
	old := clock
	t.Cleanup(func() { clock = old })
	night := func() { now := s.advance(0).Add(time.Minute); clock = func() time.Time { return now } }
	night()

	step := func(name string, wantPartial bool, check func(plan []string)) {
		t.Helper()
		plan := planWindows(t, cfg)
		if len(plan) == 0 {
			t.Fatalf("%s: plan is empty", name)
		}
		got, err := fetchWindows(t, cfg)
		var pe interface{ Partial() bool }
		if partial := errors.As(err, &pe); partial != wantPartial || (err != nil && !partial) {
			t.Fatalf("%s: fetch: %v (want partial: %v)", name, err, wantPartial)
		}
		if !slices.Equal(plan, got) {
			t.Errorf("%s: tally plan printed\n  %s\nbut tally fetch requested\n  %s", name, strings.Join(plan, "\n  "), strings.Join(got, "\n  "))
		}
		if check != nil {
			check(plan)
		}
	}
	reasons := func(plan []string) map[string]int {
		n := map[string]int{}
		for _, p := range plan {
			n[p[strings.LastIndexByte(p, ' ')+1:]]++
		}
		return n
	}

	// The second week's window fails: the backfill ends partial.
	failed := start.AddDate(0, 0, 7).Format(tally.DateLayout)
	s.failDay.Store(failed)
	step("first fetch", true, func(plan []string) {
		if r := reasons(plan); r[tally.ReasonBackfill] != len(plan) {
			t.Errorf("first fetch: plan %v, want only backfill windows", plan)
		}
	})
	s.failDay.Store("")
	step("after a failed window", false, func(plan []string) {
		if !slices.ContainsFunc(plan, func(p string) bool {
			return strings.HasPrefix(p, failed+"..") && strings.HasSuffix(p, " "+tally.ReasonMissing)
		}) {
			t.Errorf("after a failed window: plan %v does not fetch the window of %s again as missing", plan, failed)
		}
		if r := reasons(plan); r[tally.ReasonBackfill] > 0 {
			t.Errorf("after a failed window: plan %v still backfills what is loaded", plan)
		}
	})

	// A night later the interface has processed more charges.
	s.advance(24 * time.Hour)
	night()
	step("a night later", false, nil)

	// An interface with a tighter range limit splits every window.
	s.sim.SetFaults(sim.Faults{RefuseRangeDays: 1})
	s.advance(24 * time.Hour)
	night()
	step("windows split", false, nil)
	s.sim.SetFaults(sim.Faults{})
	s.advance(24 * time.Hour)
	night()
	step("after a split", false, nil)
}

// tally fetch --refetch --from D --to D fetches a loaded range again, as
// tally plan --refetch says it will, and records the run as a refetch;
// without --refetch the same range plans nothing; --refetch without both
// dates is refused.
func TestRefetchLoadedRange(t *testing.T) {
	start := tally.Day.Truncate(time.Now().UTC()).AddDate(0, 0, -30)
	s := newCLISim(t, start)
	cfg, _ := cliConfig(t, s, start, "")
	if _, err := fetchWindows(t, cfg); err != nil {
		t.Fatal(err)
	}
	from, to := start.Format(tally.DateLayout), start.AddDate(0, 0, 14).Format(tally.DateLayout)
	span := []string{"--from", from, "--to", to}
	if got := planWindows(t, cfg, span...); len(got) != 0 {
		t.Fatalf("a loaded range without --refetch plans %v, want nothing", got)
	}
	planned := planWindows(t, cfg, append(span, "--refetch")...)
	want := []string{from + ".." + start.AddDate(0, 0, 7).Format(tally.DateLayout) + " refetch", start.AddDate(0, 0, 7).Format(tally.DateLayout) + ".." + to + " refetch"}
	if !slices.Equal(planned, want) {
		t.Fatalf("plan --refetch: %v, want %v", planned, want)
	}
	fetched, err := fetchWindows(t, cfg, append(span, "--refetch")...)
	if err != nil || !slices.Equal(fetched, planned) {
		t.Fatalf("fetch --refetch requested %v (%v), plan said %v", fetched, err, planned)
	}
	out, code, _ := cli(t, "query", "--config", cfg, "--format", "csv", "SELECT command, windows FROM runs ORDER BY started DESC LIMIT 1")
	if code != job.ExitOK || strings.ReplaceAll(out, "\r\n", "\n") != "command,windows\nrefetch,2\n" {
		t.Fatalf("the refetch run is recorded as %q", out)
	}
	if _, code, stderr := cli(t, "fetch", "--config", cfg, "--refetch", "--from", from); code != job.ExitRefused || !strings.Contains(stderr, "--refetch needs --from and --to") {
		t.Fatalf("--refetch without --to: exit %d\n%s", code, stderr)
	}
}
