package store

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/tally-dev/tally"
)

// A single-organization store from before migration 0010 upgrades with
// every row given its organization (the latest snapshot's name and id),
// its ledger still its own (nothing to fetch again), and every figure the
// views give as it was.
func TestOrganizationsMigrationKeepsEveryFigure(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "tally.duckdb")
	old := olderStore(t, path, organizationsVersion,
		`INSERT INTO runs (id, command, started, status) VALUES ('0194c3a0-0000-7000-8000-000000000001', 'fetch', TIMESTAMP '2026-03-01', 'ok')`,
		`INSERT INTO organization_snapshots (snapshot_at, run_id, id, name) VALUES
            (TIMESTAMP '2026-02-01', '0194c3a0-0000-7000-8000-000000000001', 'org-old', 'Old Name'),
            (TIMESTAMP '2026-03-01', '0194c3a0-0000-7000-8000-000000000001', 'org-1', 'Acme Media')`,
		`INSERT INTO usage (granularity, basis, date, meter_name, quantity, cost, currency, project, run_id, fetched_at)
         SELECT 'day', 'usage', TIMESTAMP '2026-01-01' + INTERVAL (i % 59) DAY, 'm' || (i % 3), i,
                CAST(i AS DECIMAL(38, 12)) / 7, CASE WHEN i % 4 = 0 THEN 'EUR' ELSE 'USD' END, 'p' || (i % 5),
                '0194c3a0-0000-7000-8000-000000000001', TIMESTAMP '2026-03-01'
         FROM range(1, 400) r(i)`,
		`INSERT INTO fetch_windows (granularity, basis, scope, start, "end", rows, run_id, fetched_at)
         VALUES ('day', 'usage', 'all', DATE '2026-01-01', DATE '2026-03-01', 399, '0194c3a0-0000-7000-8000-000000000001', TIMESTAMP '2026-03-01')`,
	)
	const figures = `SELECT strftime(date, '%Y-%m') || ' ' || coalesce(project, '') || ' ' || currency || ' ' || count(*) || ' ' || CAST(sum(cost) AS VARCHAR)
FROM usage GROUP BY strftime(date, '%Y-%m'), project, currency ORDER BY 1`
	want := rowsText(t, old, figures)
	old.Close()

	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	equalLines(t, "usage after migrating", rowsText(t, s, figures), want)
	equalLines(t, "organizations of the rows", rowsText(t, s, `SELECT DISTINCT organization || ' ' || organization_id FROM usage
UNION ALL SELECT DISTINCT 'ledger ' || organization FROM fetch_windows
UNION ALL SELECT 'store ' || name || ' ' || id FROM organizations ORDER BY 1`), []string{
		"Acme Media org-1", "ledger Acme Media", "store Acme Media org-1",
	})
	// The views count what the rows held, now through the daily costs
	// rebuilt for the organization.
	equalLines(t, "project_monthly_cost", rowsText(t, s, `SELECT strftime(month, '%Y-%m') || ' ' || coalesce(project, '') || ' ' || currency || ' ' || rows || ' ' || CAST(cost AS VARCHAR)
FROM project_monthly_cost WHERE organization = 'Acme Media' ORDER BY ALL`), want)
	if got := scalar(t, s, `SELECT CAST(sum(cost) AS VARCHAR) FROM usage_day_cost WHERE organization = 'Acme Media'`); got != scalar(t, s, `SELECT CAST(sum(cost) AS VARCHAR) FROM usage`) {
		t.Errorf("daily costs after migrating sum to %v, want the usage's", got)
	}
	// The ledger is the organization's: a fetch of the api: form plans
	// nothing again.
	lw, err := s.Ledger(ctx, "Acme Media", tally.Day, tally.BasisUsage, "all")
	if err != nil || len(lw) != 1 {
		t.Fatalf("ledger of Acme Media: %v, %v; want the window loaded before", lw, err)
	}
}
