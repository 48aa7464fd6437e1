package reports

import (
	"context"
	"database/sql"
	"encoding/json"
	"testing"
	"time"

	"github.com/tally-dev/tally"
	tallysql "github.com/tally-dev/tally/sql"
)

// A month's workbook reads that month's usage rows, not the history: every
// scan of the usage table in every sheet query skips the row groups of
// other months (their zone maps), for both bases. A condition DuckDB
// cannot take to the scan (a cast of the column, a day derived from it)
// shows here as a scan of every row.
func TestMonthQueriesSkipOtherMonths(t *testing.T) {
	db := OpenTestDB(t, "tally.duckdb")
	// Two full row groups (DuckDB's are 122,880 rows) of September and
	// October, charged in October, then the report month's few rows.
	const rowGroup = 122880
	for _, ins := range []struct {
		n          int
		from, proc string
	}{
		{2 * rowGroup, "2026-09-01", "2026-10-15"},
		{500, "2026-11-01", "2026-11-02"},
	} {
		for _, basis := range []string{"usage", "reported"} {
			if _, err := db.Exec(`INSERT INTO usage (organization, granularity, basis, date, date_processed, meter_name, meter_sku, family, solution, unit, quantity, price, cost, currency, entitlement, entitlement_type, payment_method, payment_method_name, project, run_id, fetched_at)
SELECT 'default', 'hour', ?, CAST(? AS TIMESTAMP) + to_hours(i * 1440 // ?), CAST(? AS TIMESTAMP) + to_hours(i % 24), 'm' || (i % 4), 'sku' || (i % 4),
       'f', NULL, 'unit', i % 7, NULL, (i % 13)::DECIMAL(38, 12) / 7, 'USD', NULL, NULL, 'pm1', 'card', 'p' || (i % 3),
       '019a9c3e-7b1d-7c4e-9f0a-3b2c1d0e9f8a', TIMESTAMP '2026-11-20'
FROM range(?) t(i)`, basis, ins.from, ins.n, ins.proc, ins.n); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := db.Exec("CHECKPOINT"); err != nil {
		t.Fatal(err)
	}
	for _, kept := range []bool{false, true} {
		if kept {
			// As a store this Tally opened keeps it: the days' cost,
			// which the budget and anomaly figures then read.
			dayCost, err := tallysql.Inline(`INSERT INTO daily_usage_cost (organization, day, project, payment_method, family, meter_name, currency, cost)
SELECT organization, day, project, payment_method, family, meter_name, currency, cost FROM usage_day_cost`)
			if err != nil {
				t.Fatal(err)
			}
			for _, q := range []string{`CREATE TABLE kept_refills (kept VARCHAR PRIMARY KEY, done_before DATE)`,
				`INSERT INTO fetch_windows (organization, granularity, basis, scope, start, "end", rows, run_id, fetched_at)
VALUES ('default', 'hour', 'usage', 'all', DATE '2026-09-01', DATE '2026-11-03', 0, uuidv7(), TIMESTAMP '2026-11-20')`, dayCost,
				// rows to read (a pruning test: their baselines do not matter)
				`INSERT INTO daily_baselines SELECT organization, day, coalesce(project, ''), meter_name, currency, sum(cost), NULL, 0 FROM daily_usage_cost GROUP BY ALL`} {
				if _, err := db.Exec(q); err != nil {
					t.Fatal(err)
				}
			}
		}
		for _, basis := range []tally.Basis{tally.BasisUsage, tally.BasisReported} {
			b := &builder{ctx: context.Background(), src: db, closed: true,
				p: Period{Month: time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC), Basis: basis, Granularity: tally.Hour}}
			for _, name := range []string{"month_rows", "month_organizations", "summary_totals", "summary_entitlements", "by_project",
				"by_organization", "by_meter", "by_payment_method", "rate_card_check", "flags", "daily", "detail_days", "detail",
				"budget", "anomalies", "adjustments", "close_fingerprint", "close_figures", "summary_projects"} {
				q, err := b.queryText(name)
				if err != nil {
					t.Fatal(err)
				}
				args := append(b.args(), sql.Named("detail_from", b.p.Month), sql.Named("detail_to", b.p.end()))
				var kind, plan string
				if err := db.QueryRow("EXPLAIN (ANALYZE, FORMAT JSON) "+q, args...).Scan(&kind, &plan); err != nil {
					t.Fatalf("%s, basis %s: %v", name, basis, err)
				}
				var root any
				if err := json.Unmarshal([]byte(plan), &root); err != nil {
					t.Fatalf("%s: the plan: %v", name, err)
				}
				scans, dayScans := 0, 0
				walkPlan(root, func(op map[string]any) {
					info, _ := op["extra_info"].(map[string]any)
					if op["operator_name"] != "SEQ_SCAN " && op["operator_name"] != "SEQ_SCAN" {
						return
					}
					if info["Table"] == "tally.main.daily_usage_cost" || info["Table"] == "tally.main.daily_baselines" {
						dayScans++
					}
					if info["Table"] != "tally.main.usage" {
						return
					}
					scans++
					if n, _ := op["operator_rows_scanned"].(float64); n > rowGroup {
						t.Errorf("%s, basis %s: a scan of usage read %.0f rows, more than the report month's row group (filters %v)", name, basis, n, info["Filters"])
					}
				})
				switch {
				case kept && (name == "budget" || name == "anomalies"):
					// The days' cost as the store keeps it, one row a day
					// and meter: no usage row at all.
					if scans > 0 || dayScans == 0 {
						t.Errorf("%s, basis %s: %d scans of usage and %d of the kept days, want none and some", name, basis, scans, dayScans)
					}
				case name == "close_fingerprint" || name == "close_figures" || name == "adjustments":
				default:
					if scans == 0 {
						t.Errorf("%s, basis %s: no scan of usage in its plan", name, basis)
					}
				}
			}
		}
	}
}

// walkPlan calls fn for every operator of a plan DuckDB gave as JSON.
func walkPlan(n any, fn func(map[string]any)) {
	switch v := n.(type) {
	case []any:
		for _, c := range v {
			walkPlan(c, fn)
		}
	case map[string]any:
		if _, ok := v["operator_name"]; ok {
			fn(v)
		}
		walkPlan(v["children"], fn)
	}
}
