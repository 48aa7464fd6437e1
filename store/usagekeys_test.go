package store

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/tally-dev/tally"
)

// TestLoadNumbersUsageKeys: every row a load writes has the key of its own
// organization, month, payment method, meter, sku and project, across
// months, with texts left empty, for reported rows charged a month after
// they happened, for two organizations of the same texts and for loads side
// by side; a reload reuses the keys, and a failed load leaves none.
func TestLoadNumbersUsageKeys(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	bare := row(date(t, "2026-01-31"), "m2", "", "1")
	bare.PaymentMethod, bare.MeterSku = "", ""
	rows := []tally.MeterData{
		row(date(t, "2026-01-30"), "m1", "p1", "1"),
		row(date(t, "2026-01-31"), "m1", "p1", "2"),
		bare,
		row(date(t, "2026-02-01"), "m1", "p1", "3"), // the next month: another key
		row(date(t, "2026-02-01"), "m1", "p2", "4"),
	}
	q := tally.UsageQuery{Window: window(t, tally.Day, "2026-01-30", "2026-02-02")}
	load(t, s, q, rows...)
	checkUsageKeys(t, s)
	keys := count(t, s, `SELECT count(*) FROM usage_keys`)
	if keys != 4 {
		t.Errorf("%d keys for 4 sets of texts", keys)
	}

	load(t, s, q, rows...)
	if n := count(t, s, `SELECT count(*) FROM usage_keys`); n != keys {
		t.Errorf("reloading the window made %d keys, had %d", n, keys)
	}

	// Another organization's rows of the same texts get keys of their own.
	other := q
	other.Organization = "other"
	load(t, s, other, rows...)
	checkUsageKeys(t, s)

	// Reported rows: charged in the window, used the month before.
	charged := date(t, "2026-03-02")
	late := row(date(t, "2026-02-27"), "m1", "p1", "5")
	late.DateProcessed = &charged
	reported := tally.UsageQuery{Window: window(t, tally.Day, "2026-03-01", "2026-03-03"), ReportedDate: true}
	load(t, s, reported, late)
	checkUsageKeys(t, s)

	// Windows side by side, each of new texts of one month.
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			g := []tally.Granularity{tally.Hour, tally.Day}[i%2]
			w := tally.UsageQuery{Window: window(t, g, "2026-04-01", "2026-04-03"), Organization: []string{"a", "b"}[i/2]}
			_, errs[i] = s.LoadWindow(ctx, w, NewRunID(), rowsOf(row(date(t, "2026-04-01"), "m9", "p9", "1"), row(date(t, "2026-04-02"), "m8", "p9", "1")))
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	checkUsageKeys(t, s)

	// A load that fails after its rows leaves no key behind, and the next
	// one numbers on.
	keys = count(t, s, `SELECT count(*) FROM usage_keys`)
	failing := tally.UsageQuery{Window: window(t, tally.Day, "2026-05-01", "2026-05-02")}
	if _, err := s.LoadWindow(ctx, failing, NewRunID(), failingAfter(errors.New("peer went away"), row(date(t, "2026-05-01"), "m7", "p7", "1"))); err == nil {
		t.Fatal("the failing load succeeded")
	}
	if n := count(t, s, `SELECT count(*) FROM usage_keys`); n != keys {
		t.Errorf("a failed load left %d keys, had %d", n, keys)
	}
	load(t, s, failing, row(date(t, "2026-05-01"), "m7", "p7", "1"))
	checkUsageKeys(t, s)
}

// A load uses only the keys its transaction sees: a window that reaches a
// month's rows after another load of that month committed keys for the
// same texts numbers them itself, so its daily sums (which join its rows
// to their keys in its transaction) keep every row.
func TestLoadBesideACommitSumsEveryRow(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	a := tally.UsageQuery{Window: window(t, tally.Day, "2026-02-20", "2026-03-10")}
	b := tally.UsageQuery{Window: window(t, tally.Day, "2026-03-10", "2026-03-20")}
	started, committed := make(chan struct{}), make(chan struct{})
	rowsA := func(yield func(tally.MeterData, error) bool) {
		if !yield(row(date(t, "2026-02-20"), "m1", "p1", "1"), nil) {
			return
		}
		close(started)
		<-committed // the other load commits March's keys meanwhile
		for d := 1; d < 10; d++ {
			if !yield(row(date(t, fmt.Sprintf("2026-03-%02d", d)), "m1", "p1", "2"), nil) {
				return
			}
		}
	}
	done := make(chan error, 1)
	go func() {
		_, err := s.LoadWindow(ctx, a, NewRunID(), rowsA)
		done <- err
	}()
	<-started // a's transaction has begun and holds its first row
	load(t, s, b, row(date(t, "2026-03-10"), "m1", "p1", "3"), row(date(t, "2026-03-11"), "m1", "p1", "3"))
	close(committed)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	checkUsageKeys(t, s)
	kept, want := dayTotals(t, s)
	if len(want) != 12 {
		t.Fatalf("usage_day_totals gives %d days, want 12", len(want))
	}
	equalLines(t, "daily_usage_totals against usage_day_totals from the rows", kept, want)
}

// The load's daily sums, summed per key and then per texts
// (dayTotalsByKey), are usage_day_totals' from the rows where keys of one
// day's group differ only in what the sums take the least of, or in what
// paid_as and streaming_cost read: payment method names (one empty), the
// entitlement types as the interface spells them, solutions in either
// case, costs of twelve decimals, a quantity too small for DECIMAL(38, 12),
// hours and days, basis usage and reported, and a second load of the same
// window that drops rows.
func TestDayTotalsSummedByKey(t *testing.T) {
	s := openTemp(t)
	var rows []tally.MeterData
	names := []string{"PM B", "", "PM A"}
	types := [][2]string{{"", "license"}, {"c-1", "Pre-Commitment"}, {"", "cash"}, {"e", " "}, {"", ""}, {"c-2", "odd type"}, {"c-3", "LICENSE"}}
	solutions := []string{"Streaming", "streaming", "VOD"}
	for i := range 42 {
		md := row(date(t, "2026-03-01").Add(time.Duration(i%30)*time.Hour), "m1", "p1", fmt.Sprintf("%d.%012d", i, 7*i+1))
		md.PaymentMethodName = names[i%len(names)]
		md.Entitlement, md.EntitlementType = types[i%len(types)][0], types[i%len(types)][1]
		md.Solution = solutions[i%len(solutions)]
		md.Quantity = float64(i) / 3
		if i == 5 {
			md.Quantity = 1e-15
		}
		if i%8 == 0 {
			md.Currency = "EUR"
		}
		rows = append(rows, md)
	}
	hours := tally.UsageQuery{Window: window(t, tally.Hour, "2026-03-01", "2026-03-03")}
	load(t, s, hours, rows...)
	days := tally.UsageQuery{Window: window(t, tally.Day, "2026-03-01", "2026-03-03")}
	var daily []tally.MeterData
	for _, md := range rows {
		md.Date = date(t, "2026-03-01")
		daily = append(daily, md)
	}
	load(t, s, days, daily...)
	charged := date(t, "2026-03-02")
	var late []tally.MeterData
	for _, md := range daily[:9] {
		md.Date = date(t, "2026-02-27")
		md.DateProcessed = &charged
		late = append(late, md)
	}
	load(t, s, tally.UsageQuery{Window: days.Window, ReportedDate: true}, late...)
	check := func(step string) {
		t.Helper()
		checkUsageKeys(t, s)
		kept, want := dayTotals(t, s)
		if len(want) < 4 {
			t.Fatalf("%s: usage_day_totals gives %d rows; the rows make more", step, len(want))
		}
		equalLines(t, step+": daily_usage_totals against usage_day_totals from the rows", kept, want)
	}
	check("three loads")
	load(t, s, hours, rows[:20]...)
	check("the hours again, fewer")
}

// A store whose rows 0015 numbered (keys of four texts) has them numbered
// again when a writer opens it: the old numbers are dropped with their
// keys, whatever they were, and every row gets a key of all its texts.
func TestOpenRenumbersFourTextKeys(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tally.duckdb")
	old := olderStore(t, path, usageKeysVersion,
		`INSERT INTO usage (organization, granularity, basis, date, meter_name, quantity, cost, currency, family, project, run_id, fetched_at)
SELECT '', 'day', 'usage', TIMESTAMP '2025-12-01' + INTERVAL (i % 40) DAY, 'm' || (i % 3), 1, 1, 'USD', 'f' || (i % 2), 'p', uuid(), now()
FROM range(120) t(i)`,
		`INSERT INTO usage_keys (id, organization, basis, granularity, month, period_month, meter_name, project)
SELECT i, '', 'usage', 'day', TIMESTAMP '2025-12-01', TIMESTAMP '2025-12-01', 'm' || i, 'p' FROM range(3) t(i)`,
		`UPDATE usage SET key_id = CAST(right(meter_name, 1) AS INTEGER)`)
	old.Close()
	s, told := openTold(t, path)
	checkUsageKeys(t, s)
	if len(told) != 2 || told[0].Table != "usage" || told[1].Done != 2 {
		t.Errorf("told %+v, want the two months of usage", told)
	}
	// December and January, each of three meters by two families
	if n := count(t, s, `SELECT count(*) FROM usage_keys`); n != 12 {
		t.Errorf("%d keys, want 12 (two months of three meters by two families)", n)
	}
}

// openTold opens the store at path as a writer, with the months its
// fills and numbering told.
func openTold(t *testing.T, path string) (*Store, []FillProgress) {
	t.Helper()
	var told []FillProgress
	s, err := Open(context.Background(), path, Notify(func(p FillProgress) { told = append(told, p) }))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, told
}

// TestOpenNumbersOlderUsage: a store from before usage keys has its rows
// numbered when a writer opens it, a month at a time, each month told; the
// focus view then gives the rows it gave before, and a load after numbers
// on from the keys made.
func TestOpenNumbersOlderUsage(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tally.duckdb")
	old := olderStore(t, path, usageKeysVersion,
		`INSERT INTO usage (organization, granularity, basis, date, meter_name, meter_sku, quantity, cost, currency, payment_method, project, run_id, fetched_at)
SELECT '', 'day', 'usage', TIMESTAMP '2025-11-01' + INTERVAL (i % 90) DAY, 'm' || (i % 3), CASE WHEN i % 2 = 0 THEN 'sku' END,
       1, 1, 'USD', CASE WHEN i % 5 <> 0 THEN 'pm' END, CASE WHEN i % 7 <> 0 THEN 'p' || (i % 2) END, uuid(), now()
FROM range(400) t(i)`)
	old.Close()
	s, told := openTold(t, path)
	checkUsageKeys(t, s)
	if len(told) != 3 || told[0].Table != "usage" || told[0].Month.Format("2006-01") != "2025-11" || told[2].Done != 3 || told[2].Months != 3 {
		t.Errorf("told %+v, want the three months of usage", told)
	}
	keys := count(t, s, `SELECT count(*) FROM usage_keys`)
	if keys == 0 {
		t.Fatal("no keys")
	}
	load(t, s, tally.UsageQuery{Window: window(t, tally.Day, "2026-01-15", "2026-01-16")}, row(date(t, "2026-01-15"), "m0", "p0", "1"))
	checkUsageKeys(t, s)
	if n := count(t, s, `SELECT count(*) FROM usage_keys`); n != keys+1 {
		t.Errorf("%d keys after a load of new texts, had %d", n, keys)
	}
}
