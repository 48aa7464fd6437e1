package store

import (
	"context"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	tallysql "github.com/tally-dev/tally/sql"
)

// openHelperEnv makes the test binary a process that opens the store
// named in it as a writer (filling what a migration listed), closes it
// and exits.
const openHelperEnv = "TALLY_STORE_TEST_OPEN"

// keptLines are a kept table's rows and the rows usage gives for it, each
// as "day-or-month|columns…", in order.
type keptLines struct{ kept, want []string }

func keptTables(t *testing.T, s *Store, fromUsage bool) map[string]keptLines {
	t.Helper()
	const costCols = `organization, day, project, payment_method, family, meter_name, currency, cost`
	const baseCols = `organization, day, project, meter_name, currency, cost, baseline, baseline_days`
	inline := func(q string) string {
		t.Helper()
		if !fromUsage {
			return "SELECT 1 WHERE false"
		}
		out, err := tallysql.Inline(q)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	scored := "SELECT 1 WHERE false"
	if fromUsage {
		scored = scoredFromRows(t, `strftime(day, '%Y-%m-%d'), concat_ws('|', `+baseCols+`)`)
	}
	return map[string]keptLines{
		keptDayCost: {
			rowsText(t, s, `SELECT strftime(day, '%Y-%m-%d'), concat_ws('|', `+costCols+`) FROM daily_usage_cost ORDER BY ALL`),
			rowsText(t, s, inline(`SELECT strftime(day, '%Y-%m-%d'), concat_ws('|', `+costCols+`) FROM usage_day_cost ORDER BY ALL`)),
		},
		keptTotals: {
			rowsText(t, s, `SELECT strftime(month, '%Y-%m-%d'), concat_ws('|', `+dayTotalsColumns+`) FROM daily_usage_totals ORDER BY ALL`),
			rowsText(t, s, inline(`SELECT strftime(month, '%Y-%m-%d'), concat_ws('|', `+dayTotalsColumns+`) FROM usage_day_totals ORDER BY ALL`)),
		},
		keptBaselines: {
			rowsText(t, s, `SELECT strftime(day, '%Y-%m-%d'), concat_ws('|', `+baseCols+`) FROM daily_baselines ORDER BY ALL`),
			rowsText(t, s, scored),
		},
	}
}

// before keeps the lines whose day or month is before bound (YYYY-MM-DD).
func before(lines []string, bound string) []string {
	var out []string
	for _, l := range lines {
		if l[:10] < bound {
			out = append(out, l)
		}
	}
	return out
}

// TestKeptTablesFillKilledAtAnyMoment: a writer filling the kept tables a
// migration listed (a real process, SIGKILLed again and again at random
// moments) leaves each table either filled from usage up to the month it
// noted, or whole and unlisted; each next writer goes on from there, and
// the last leaves every table exactly as usage gives it.
func TestKeptTablesFillKilledAtAnyMoment(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "tally.duckdb")
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	// Twenty months of hours of 12 projects on two meters: a fill of some
	// seconds.
	for _, q := range []string{
		`INSERT INTO fetch_windows (organization, granularity, basis, scope, start, "end", rows, run_id, fetched_at)
         VALUES ('org', 'hour', 'usage', 'all', DATE '2025-01-01', DATE '2026-09-01', 0, uuidv7(), now()::TIMESTAMP)`,
		`INSERT INTO usage (organization, granularity, basis, date, date_processed, meter_name, quantity, cost, currency, project, payment_method, run_id, fetched_at)
         SELECT 'org', 'hour', 'usage', TIMESTAMP '2025-01-01' + to_hours(h), TIMESTAMP '2025-01-01' + to_hours(h + 5),
                CASE WHEN p % 2 = 0 THEN 'encoding' ELSE 'storage' END, h % 17, CAST((h * 7 + p) % 23 AS DECIMAL(38, 12)) / 8,
                'USD', 'p' || p, 'pm-1', uuidv7(), now()::TIMESTAMP
         FROM range(14592) r(h), range(12) q(p)`,
	} {
		if _, err := s.db.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if err := s.RefillKept(ctx); err != nil {
		t.Fatal(err)
	}
	want := keptTables(t, s, true)
	for kept, l := range want {
		if len(l.want) < 1000 {
			t.Fatalf("%s: %d rows from usage; the fixture makes more", kept, len(l.want))
		}
		equalLines(t, kept+" after RefillKept", l.kept, l.want)
	}
	s.Close()
	// As a migration leaves them: emptied and listed.
	mark := func(t *testing.T) {
		t.Helper()
		s, err := Open(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if err := s.markRefills(ctx); err != nil {
			t.Fatal(err)
		}
		// and the usage rows as a store from before usage keys has them
		for _, q := range []string{`UPDATE usage SET key_id = NULL`, `DELETE FROM usage_keys`} {
			if _, err := s.db.ExecContext(ctx, q); err != nil {
				t.Fatal(err)
			}
		}
	}
	mark(t)

	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 23))
	kills, partial := 0, 0
	for i := 0; ; i++ {
		// Killed at random moments until enough of them fell inside a
		// fill; then one writer left to finish.
		last := (kills >= 8 && partial > 0) || i == 40
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), openHelperEnv+"="+path)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		d := 300*time.Millisecond + time.Duration(rng.Int64N(int64(1700*time.Millisecond)))
		if last {
			d = 10 * time.Minute
		}
		finished := false
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("the writer failed: %v", err)
			}
			finished = true
		case <-time.After(d):
			cmd.Process.Kill()
			<-done
			kills++
		}
		ro, err := Open(ctx, path, ReadOnly())
		if err != nil {
			t.Fatalf("after kill %d at %s: %v", kills, d, err)
		}
		listed := map[string]string{}
		for _, r := range rowsText(t, ro, `SELECT kept, coalesce(strftime(done_before, '%Y-%m-%d'), '') FROM kept_refills`) {
			k, b, _ := strings.Cut(r, "|")
			listed[k] = b
		}
		got := keptTables(t, ro, false)
		// Every row numbered so far has its own key.
		checkUsageKeysOf(t, ro, false)
		ro.Close()
		for _, k := range keptOrder {
			b, isListed := listed[k]
			switch {
			case !isListed:
				equalLines(t, k+" unlisted after a kill", got[k].kept, want[k].want)
			case b == "":
				if len(got[k].kept) > 0 {
					t.Fatalf("%s listed with no month reached holds %d rows", k, len(got[k].kept))
				}
			default:
				partial++
				equalLines(t, k+" before "+b, before(got[k].kept, b), before(want[k].want, b))
			}
		}
		if finished {
			if len(listed) > 0 {
				t.Fatalf("a writer that finished left %v listed", listed)
			}
			if last {
				break
			}
			// Done before enough kills fell inside it: listed again.
			mark(t)
		}
	}
	if kills < 8 || partial == 0 {
		t.Fatalf("%d kills, %d states part filled: the loop tested too little", kills, partial)
	}
	s, err = Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for kept, l := range keptTables(t, s, true) {
		equalLines(t, kept+" at the end", l.kept, l.want)
	}
	checkUsageKeys(t, s)
	if n := count(t, s, `SELECT count(*) FROM kept_refills`); n != 0 {
		t.Fatalf("%d tables still listed", n)
	}
	t.Logf("%d kills, %d tables seen part filled", kills, partial)
}
