package store

import (
	"context"
	"testing"
	"time"

	"github.com/tally-dev/tally"
)

// Reads of a project's month to date become days: the first read holds
// everything since the month began (dated its first day, catch_up), each
// later one the difference from the read before, dated the midpoint's day;
// a read that says less is a negative day marked as a correction, kept.
// Rebuilding after every read leaves one set of rows and one ledger
// window per project and month.
func TestProjectUsageDays(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	june := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	read := func(at time.Time, q string) {
		t.Helper()
		pu := tally.ProjectUsage{Project: "news", Start: june, End: at.Truncate(24*time.Hour).AddDate(0, 0, 1),
			Meters: []tally.ProjectMeterUsage{{MeterName: "enc", Unit: "minutes", Quantity: tally.MustDecimal(q)}}}
		if _, err := s.SaveProjectUsage(ctx, "", NewRunID(), at, []tally.ProjectUsage{pu}); err != nil {
			t.Fatal(err)
		}
	}
	read(june.Add(4*24*time.Hour+23*time.Hour+50*time.Minute), "10.5")  // June 5, 23:50
	read(june.Add(5*24*time.Hour+23*time.Hour+50*time.Minute), "12.25") // June 6
	read(june.Add(6*24*time.Hour+23*time.Hour+50*time.Minute), "12")    // June 7: less
	got := rowsText(t, s, `SELECT day, quantity, catch_up, correction FROM project_usage_days ORDER BY day`)
	equalLines(t, "days", got, []string{
		"2026-06-01|10.500000000000|true|false",
		"2026-06-06|1.750000000000|false|false",
		"2026-06-07|-0.250000000000|false|true",
	})
	got = rowsText(t, s, `SELECT CAST(date AS DATE), quantity, basis, granularity, cost IS NULL FROM usage ORDER BY date`)
	equalLines(t, "estimated rows", got, []string{
		"2026-06-01|10.5|estimated|day|true",
		"2026-06-06|1.75|estimated|day|true",
		"2026-06-07|-0.25|estimated|day|true",
	})
	got = rowsText(t, s, `SELECT basis, scope, start, "end", rows FROM fetch_windows`)
	equalLines(t, "ledger", got, []string{"estimated|projects=news|2026-06-01|2026-06-08|3"})
	// The estimate numbers its rows in its own transaction, as a load does.
	checkUsageKeys(t, s)
	first, err := s.FirstProjectSnapshot(ctx)
	if err != nil || first == nil || !first.Equal(june.Add(4*24*time.Hour+23*time.Hour+50*time.Minute)) {
		t.Fatalf("first read %v, %v", first, err)
	}
}
