package store

import (
	"context"
	"testing"
)

// usage_coverage chooses one granularity per basis and day from the
// ledger: hour over day where a window covers the whole day, month for a
// month no hour or day covers whole, week and year only for buckets none of
// whose days is chosen at a finer granularity (a week or year row cannot be
// split, so it is left out rather than counted twice).
func TestUsageCoverageChoosesPerDay(t *testing.T) {
	s := openTemp(t)
	for _, w := range []struct{ g, basis, start, end string }{
		{"year", "usage", "2025-01-01", "2027-01-01"},
		{"week", "usage", "2024-12-30", "2025-03-03"}, // Mondays
		{"day", "usage", "2025-02-01", "2025-03-01"},
		{"hour", "usage", "2025-02-10", "2025-02-12"},
		{"month", "usage", "2025-03-01", "2025-04-01"},
		{"day", "usage", "2025-04-01", "2025-04-15"}, // half of April: month rows of April would be needed, none loaded
		{"day", "reported", "2025-02-01", "2025-02-03"},
	} {
		if _, err := s.DB().ExecContext(context.Background(), `INSERT INTO fetch_windows (granularity, basis, scope, start, "end", rows, run_id, fetched_at)
VALUES (?, ?, 'all', CAST(? AS DATE), CAST(? AS DATE), 0, uuid(), now())`, w.g, w.basis, w.start, w.end); err != nil {
			t.Fatal(err)
		}
	}
	got := rowsText(t, s, `SELECT basis, granularity, min(day), max(day), count(*) FROM usage_coverage GROUP BY ALL ORDER BY ALL`)
	equalLines(t, "coverage", got, []string{
		"reported|day|2025-02-01|2025-02-02|2",
		"usage|day|2025-02-01|2025-04-14|40", // 26 days of February, 14 of April
		"usage|hour|2025-02-10|2025-02-11|2",
		"usage|month|2025-03-01|2025-03-31|31",
		"usage|week|2024-12-30|2025-01-26|28", // the week of 27 January holds 1-2 February: left out
		"usage|year|2026-01-01|2026-12-31|365",
	})
	// Another organization's ledger is its own: its month window of
	// February neither hides the day and hour rows chosen above nor takes
	// theirs.
	if _, err := s.DB().ExecContext(context.Background(), `INSERT INTO fetch_windows (organization, granularity, basis, scope, start, "end", rows, run_id, fetched_at)
VALUES ('other', 'month', 'usage', 'all', DATE '2025-02-01', DATE '2025-03-01', 0, uuid(), now())`); err != nil {
		t.Fatal(err)
	}
	equalLines(t, "coverage of another organization", rowsText(t, s, `SELECT organization, basis, granularity, min(day), max(day), count(*) FROM usage_coverage
WHERE organization = 'other' OR day BETWEEN DATE '2025-02-01' AND DATE '2025-02-28' GROUP BY ALL ORDER BY ALL`), []string{
		"|reported|day|2025-02-01|2025-02-02|2",
		"|usage|day|2025-02-01|2025-02-28|26",
		"|usage|hour|2025-02-10|2025-02-11|2",
		"other|usage|month|2025-02-01|2025-02-28|28",
	})
	if n := scalar(t, s, `SELECT count(*) FROM (SELECT organization, basis, day FROM usage_coverage GROUP BY ALL HAVING count(*) > 1)`); n != int64(0) {
		t.Errorf("%v days chosen at two granularities", n)
	}
}
