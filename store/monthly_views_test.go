package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tally-dev/tally"
	"github.com/tally-dev/tally/fetch/sim"
	tallysql "github.com/tally-dev/tally/sql"
)

// monthlyViewsBefore are the monthly views as they were defined before
// they read usage_finest_days (daily_usage_totals, whose month is stored)
// instead of summing usage_finest row by row (issue 23), each named
// <view>_before.
var monthlyViewsBefore = map[string]string{
	"project_monthly_cost": `CREATE VIEW project_monthly_cost_before AS
SELECT organization,
       basis,
       granularity,
       CAST(date_trunc('month', period_at) AS DATE) AS month,
       project,
       currency,
       count(*) AS rows,
       sum(cost) AS cost,
       coalesce(sum(cost) FILTER (WHERE paid_as IN ('direct', 'other')), 0) AS billed_cost
FROM usage_finest
GROUP BY organization, basis, granularity, CAST(date_trunc('month', period_at) AS DATE), project, currency;`,
	"cost_month_over_month": `CREATE VIEW cost_month_over_month_before AS
WITH monthly AS (
    SELECT u.organization,
           u.basis,
           CAST(date_trunc('month', u.period_at) AS DATE) AS month,
           coalesce(u.project, '') AS project,
           u.meter_name,
           u.currency,
           sum(u.cost) AS cost
    FROM usage_finest u
    GROUP BY ALL
),
last AS (
    SELECT basis, max(month) AS month FROM monthly GROUP BY basis
),
grid AS (
    SELECT organization, basis, month, project, meter_name, currency FROM monthly
    UNION
    SELECT m.organization, m.basis, CAST(m.month + INTERVAL 1 MONTH AS DATE), m.project, m.meter_name, m.currency
    FROM monthly m
    JOIN last l ON l.basis = m.basis
    WHERE m.month < l.month
)
SELECT g.organization,
       g.basis,
       g.month,
       nullif(g.project, '') AS project,
       g.meter_name,
       g.currency,
       coalesce(c.cost, 0) AS cost,
       coalesce(p.cost, 0) AS previous_cost,
       coalesce(c.cost, 0) - coalesce(p.cost, 0) AS change,
       CASE WHEN coalesce(p.cost, 0) <> 0
            THEN CAST(coalesce(c.cost, 0) - p.cost AS DOUBLE) / CAST(p.cost AS DOUBLE)
       END AS change_pct
FROM grid g
LEFT JOIN monthly c ON c.organization = g.organization AND c.basis = g.basis AND c.month = g.month AND c.project = g.project
                   AND c.meter_name = g.meter_name AND c.currency = g.currency
LEFT JOIN monthly p ON p.organization = g.organization AND p.basis = g.basis AND p.month = CAST(g.month - INTERVAL 1 MONTH AS DATE) AND p.project = g.project
                   AND p.meter_name = g.meter_name AND p.currency = g.currency;`,
	"rate_card_variance": `CREATE VIEW rate_card_variance_before AS
WITH billed AS (
    SELECT u.organization,
           u.basis,
           date_trunc('month', u.period_at) AS month_start,
           coalesce(u.payment_method, '') AS payment_method,
           u.meter_name,
           coalesce(u.meter_sku, '') AS meter_sku,
           u.currency,
           min(nullif(u.payment_method_name, '')) AS payment_method_name,
           count(*) AS rows,
           sum(CAST(u.quantity AS DECIMAL(38, 12))) AS quantity,
           sum(u.cost) AS cost
    FROM usage_finest u
    GROUP BY ALL
),
checked AS (
    SELECT b.*,
           r.matched_by,
           CASE
               WHEN r.rule IS NULL THEN 'no price'
               WHEN r.price IS NULL THEN 'several prices'
               WHEN r.currency IS NOT NULL AND r.currency <> b.currency THEN 'currency differs'
           END AS problem,
           r.price AS card_price
    FROM billed b
    LEFT JOIN rate_card_matches r
           ON r.organization = b.organization
          AND r.month = CAST(b.month_start AS DATE)
          AND r.payment_method_id = b.payment_method
          AND r.meter_name = b.meter_name
          AND coalesce(r.meter_sku, '') = b.meter_sku
),
expected AS (
    SELECT *,
           CASE WHEN problem IS NULL THEN CAST(quantity * card_price AS DECIMAL(38, 12)) END AS expected_cost
    FROM checked
)
SELECT organization, -- the organization (organizations.name)
       basis,
       CAST(month_start AS DATE) AS month,
       nullif(payment_method, '') AS payment_method,
       payment_method_name,
       meter_name,
       nullif(meter_sku, '') AS meter_sku,
       currency,
       rows,
       quantity,
       cost,
       CASE WHEN problem IS NULL THEN card_price END AS card_price,
       matched_by,
       expected_cost,
       cost - expected_cost AS variance,
       CASE WHEN expected_cost <> 0 THEN CAST(cost - expected_cost AS DOUBLE) / CAST(expected_cost AS DOUBLE) END AS variance_pct,
       coalesce(problem, CASE WHEN cost = expected_cost THEN 'ok' ELSE 'variance' END) AS status
FROM expected;`,
	"entitlement_coverage": `CREATE VIEW entitlement_coverage_before AS
WITH m AS (
    SELECT organization,
           basis,
           CAST(date_trunc('month', period_at) AS DATE) AS month,
           project,
           meter_name,
           currency,
           count(*) AS rows,
           sum(cost) AS cost,
           coalesce(sum(cost) FILTER (WHERE paid_as = 'direct'), 0) AS billed_directly,
           coalesce(sum(cost) FILTER (WHERE paid_as = 'balance'), 0) AS from_balance,
           coalesce(sum(cost) FILTER (WHERE paid_as = 'license'), 0) AS license_covered,
           coalesce(sum(cost) FILTER (WHERE paid_as = 'other'), 0) AS other_entitlement
    FROM usage_finest
    GROUP BY organization, basis, CAST(date_trunc('month', period_at) AS DATE), project, meter_name, currency
)
SELECT *,
       CASE WHEN cost <> 0 THEN CAST(from_balance + license_covered AS DOUBLE) / CAST(cost AS DOUBLE) END AS covered_share
FROM m;`,
}

// costByProjectMonthBefore is the named query cost_by_project_month as it
// was before it summed usage_day_totals instead of the usage rows.
const costByProjectMonthBefore = `SELECT organization,
       basis,
       date_trunc('month', date)::DATE AS month,
       project,
       currency,
       sum(cost) AS cost,
       count(*) AS rows
FROM usage
WHERE granularity = (SELECT min_by(granularity, CASE granularity WHEN 'hour' THEN 1 WHEN 'day' THEN 2 WHEN 'week' THEN 3 WHEN 'month' THEN 4 ELSE 5 END) FROM usage)
GROUP BY ALL
ORDER BY organization, basis, month, project, currency;`

// monthlyFixture is the export fixture (three months at day granularity)
// with more that changes what the monthly views count: three days of
// October again hourly, August and September on basis reported, a week
// window whose bucket finer days take, and one project's estimated usage
// of October.
func monthlyFixture(t *testing.T) *Store {
	t.Helper()
	s, _ := monthlyFixtureServer(t)
	return s
}

// monthlyFixtureServer is monthlyFixture with the simulated interface it
// was loaded from, to load more of it.
func monthlyFixtureServer(t *testing.T) (*Store, *sim.Server) {
	t.Helper()
	s, srv := exportFixture(t)
	for _, q := range []tally.UsageQuery{
		{Window: window(t, tally.Hour, "2026-10-05", "2026-10-08")},
		{Window: window(t, tally.Day, "2026-08-01", "2026-10-01"), ReportedDate: true},
		{Window: window(t, tally.Week, "2026-07-27", "2026-08-03")},
	} {
		load(t, s, q, srv.Rows(q)...)
	}
	project := rowsText(t, s, `SELECT min(project) FROM usage WHERE project IS NOT NULL`)[0]
	oct := date(t, "2026-10-01")
	pu := tally.ProjectUsage{Project: project, Start: oct, End: date(t, "2026-10-10"),
		Meters: []tally.ProjectMeterUsage{{MeterName: rowsText(t, s, `SELECT min(meter_name) FROM usage`)[0], Unit: "minutes", Quantity: tally.MustDecimal("42.5")}}}
	if _, err := s.SaveProjectUsage(context.Background(), "", NewRunID(), date(t, "2026-10-09").Add(23*time.Hour), []tally.ProjectUsage{pu}); err != nil {
		t.Fatal(err)
	}
	return s, srv
}

// TestMonthlyViewsAsBefore: project_monthly_cost, cost_month_over_month,
// rate_card_variance and entitlement_coverage, now summing the daily
// totals the load keeps, give exactly the rows of their former
// definitions, in all and for each month asked with WHERE month = ….
func TestMonthlyViewsAsBefore(t *testing.T) {
	ctx := context.Background()
	s := monthlyFixture(t)
	for _, q := range monthlyViewsBefore {
		if _, err := s.db.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	// The fixture must give the views something of each kind to count.
	kinds := rowsText(t, s, `SELECT DISTINCT basis || '/' || granularity FROM project_monthly_cost_before ORDER BY 1`)
	equalLines(t, "bases and granularities counted", kinds, []string{"estimated/day", "reported/day", "usage/day", "usage/hour"})
	months := rowsText(t, s, `SELECT DISTINCT month FROM cost_month_over_month_before ORDER BY 1`)
	if len(months) < 3 {
		t.Fatalf("months compared: %q; the fixture has three or more", months)
	}
	for view := range monthlyViewsBefore {
		want, got := viewLines(t, s, view+"_before"), viewLines(t, s, view)
		if len(want) < 10 {
			t.Fatalf("%s_before has %d rows; the fixture holds more", view, len(want))
		}
		equalLines(t, view, got, want)
		for _, m := range months {
			q := `SELECT * FROM %s WHERE month = DATE '` + m + `' ORDER BY ALL`
			equalLines(t, view+" in "+m, rowsText(t, s, fmt.Sprintf(q, view)), rowsText(t, s, fmt.Sprintf(q, view+"_before")))
		}
		t.Logf("%s: %d rows, the same", view, len(got))
	}
	text, err := fs.ReadFile(tallysql.Queries, "queries/cost_by_project_month.sql")
	if err != nil {
		t.Fatal(err)
	}
	// The query counts the finest granularity loaded anywhere: the
	// fixture's three hourly days of October.
	want := rowsText(t, s, costByProjectMonthBefore)
	if len(want) < 3 {
		t.Fatalf("cost_by_project_month before: %d rows; the fixture holds more", len(want))
	}
	equalLines(t, "cost_by_project_month", rowsText(t, s, string(text)), want)
}

// dayTotals is daily_usage_totals as kept, and as usage_day_totals'
// definition gives it from the usage rows now, each in order as lines.
func dayTotals(t *testing.T, s *Store) (kept, fromRows []string) {
	t.Helper()
	ctx := context.Background()
	r, err := s.db.QueryContext(ctx, `SELECT `+dayTotalsColumns+` FROM daily_usage_totals ORDER BY ALL`)
	if err != nil {
		t.Fatal(err)
	}
	kept = lines(t, r)
	q, err := tallysql.Inline(`SELECT ` + dayTotalsColumns + ` FROM usage_day_totals ORDER BY ALL`)
	if err != nil {
		t.Fatal(err)
	}
	if r, err = s.db.QueryContext(ctx, q); err != nil {
		t.Fatal(err)
	}
	return kept, lines(t, r)
}

// baselines are daily_baselines, and the anomaly_baselines view
// (sql/views/anomaly_baselines.sql, as written) computed from the usage
// rows.
func baselines(t *testing.T, s *Store) (kept, fromRows []string) {
	t.Helper()
	const cols = `organization, day, project, meter_name, currency, cost, baseline, baseline_days`
	kept = rowsText(t, s, `SELECT concat_ws('|', `+cols+`) FROM daily_baselines ORDER BY ALL`)
	return kept, rowsText(t, s, scoredFromRows(t, `concat_ws('|', `+cols+`)`))
}

// scoredFromRows is a query of what, computed from usage by
// sql/views/anomaly_baselines.sql, daily_baselines keeps: the columns
// cols of every scored day, in order.
func scoredFromRows(t *testing.T, cols string) string {
	t.Helper()
	q, err := tallysql.Inline(`SELECT ` + cols + ` FROM anomaly_baselines ORDER BY ALL`)
	if err != nil {
		t.Fatal(err)
	}
	return q
}

// TestDayTotalsKeptByTheLoad: after every kind of write to usage (a
// refetch with fewer rows, one project's window, a window that cuts an
// older one back, hours over days, basis reported, a month window, the
// per-project estimates read twice, a load that fails), daily_usage_totals
// holds what usage_day_totals gives from the rows, and the database's
// usage_day_totals reads it.
func TestDayTotalsKeptByTheLoad(t *testing.T) {
	ctx := context.Background()
	s, srv := exportFixture(t)
	check := func(step string) []string {
		t.Helper()
		kept, want := dayTotals(t, s)
		if len(want) == 0 {
			t.Fatalf("%s: usage_day_totals gives no rows", step)
		}
		equalLines(t, step+": daily_usage_totals against usage_day_totals from the rows", kept, want)
		kb, wb := baselines(t, s)
		if len(wb) == 0 {
			t.Fatalf("%s: the anomalies' baselines from the rows are empty", step)
		}
		equalLines(t, step+": daily_baselines against the anomalies' baselines from the rows", kb, wb)
		return kept
	}
	if def := rowsText(t, s, `SELECT sql FROM duckdb_views() WHERE view_name = 'anomalies'`); len(def) != 1 || !strings.Contains(def[0], "FROM anomaly_baselines") {
		t.Fatalf("the database's anomalies is %q; it should read anomaly_baselines", def)
	}
	if def := rowsText(t, s, `SELECT sql FROM duckdb_views() WHERE view_name = 'anomaly_baselines'`); len(def) != 1 || !strings.Contains(def[0], "FROM daily_baselines") {
		t.Fatalf("the database's anomaly_baselines is %q; it should read daily_baselines", def)
	}
	def := rowsText(t, s, `SELECT sql FROM duckdb_views() WHERE view_name = 'usage_day_totals'`)
	if len(def) != 1 || !strings.Contains(def[0], "daily_usage_totals") {
		t.Fatalf("the database's usage_day_totals is %q; it should read daily_usage_totals", def)
	}
	check("the fixture")

	sep := tally.UsageQuery{Window: window(t, tally.Day, "2026-09-01", "2026-10-01")}
	rows := srv.Rows(sep)
	load(t, s, sep, rows[:len(rows)/2]...)
	check("September again with half its rows")

	project := rowsText(t, s, `SELECT min(project) FROM usage WHERE project IS NOT NULL`)[0]
	scoped := tally.UsageQuery{Window: window(t, tally.Day, "2026-10-01", "2026-10-11"), ProjectNames: []string{project}}
	rows = srv.Rows(scoped)
	for i := range rows {
		rows[i].Cost = rows[i].Cost.Add(tally.MustDecimal("1.5"))
	}
	load(t, s, scoped, rows...)
	check("one project's ten days, dearer")

	// Dearer days move the baselines of the 28 days after them (anomalies).
	aug := tally.UsageQuery{Window: window(t, tally.Day, "2026-08-01", "2026-08-11")}
	rows = srv.Rows(aug)
	for i := range rows {
		rows[i].Cost = rows[i].Cost.Add(tally.MustDecimal("20"))
	}
	load(t, s, aug, rows...)
	check("August's first ten days, dearer")

	for _, q := range []tally.UsageQuery{
		{Window: window(t, tally.Day, "2026-09-25", "2026-10-05")},
		{Window: window(t, tally.Hour, "2026-10-05", "2026-10-08")},
		{Window: window(t, tally.Day, "2026-08-01", "2026-10-01"), ReportedDate: true},
		{Window: window(t, tally.Month, "2026-10-01", "2026-11-01")},
	} {
		load(t, s, q, srv.Rows(q)...)
		check(fmt.Sprintf("%s %s %s", q.Window, q.Window.Granularity, q.Basis()))
	}

	oct := date(t, "2026-10-01")
	meter := rowsText(t, s, `SELECT min(meter_name) FROM usage`)[0]
	for i, qty := range []string{"42.5", "50"} {
		pu := tally.ProjectUsage{Project: project, Start: oct, End: date(t, "2026-10-12"),
			Meters: []tally.ProjectMeterUsage{{MeterName: meter, Unit: "minutes", Quantity: tally.MustDecimal(qty)}}}
		if _, err := s.SaveProjectUsage(ctx, "", NewRunID(), date(t, "2026-10-09").AddDate(0, 0, i).Add(23*time.Hour), []tally.ProjectUsage{pu}); err != nil {
			t.Fatal(err)
		}
		check(fmt.Sprintf("estimates read %d times", i+1))
	}
	if n := count(t, s, `SELECT count(*) FROM daily_usage_totals WHERE basis = 'estimated'`); n == 0 {
		t.Fatal("no estimated totals: the estimates were not counted")
	}

	before := check("before a failed load")
	q := tally.UsageQuery{Window: window(t, tally.Day, "2026-08-01", "2026-08-11")}
	if _, err := s.LoadWindow(ctx, q, NewRunID(), failingAfter(errors.New("connection reset"), srv.Rows(q)[:3]...)); err == nil {
		t.Fatal("a load whose rows fail succeeded")
	}
	equalLines(t, "after a failed load", check("after a failed load"), before)
}

// A store an older Tally loaded gets daily_usage_totals filled as it is
// migrated, in month order, with what usage_day_totals gives from its
// rows: one from before the table (0011), and one from before its day of
// date, unit, first and last bucket and streaming cost (0013), whose
// totals are computed again.
func TestMigrationFillsDailyUsageTotals(t *testing.T) {
	for _, v := range []int{dayTotalsVersion, dayTotalsDetailVersion} {
		t.Run(fmt.Sprintf("from before %04d", v), func(t *testing.T) { migrationFillsDailyUsageTotals(t, v) })
	}
}

func migrationFillsDailyUsageTotals(t *testing.T, version int) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "tally.duckdb")
	old := olderStore(t, path, version,
		`INSERT INTO fetch_windows (granularity, basis, scope, start, "end", rows, run_id, fetched_at)
         VALUES ('hour', 'usage', 'all', DATE '2026-03-30', DATE '2026-04-03', 8, uuidv7(), now()::TIMESTAMP)`,
		`INSERT INTO usage (granularity, basis, date, date_processed, meter_name, quantity, cost, currency, project, payment_method,
                            payment_method_name, entitlement_type, run_id, fetched_at)
         SELECT 'hour', CASE WHEN h < 6 THEN 'usage' ELSE 'reported' END, TIMESTAMP '2026-03-30' + to_hours(h * 11),
                CASE WHEN h >= 5 THEN TIMESTAMP '2026-04-02' END, 'encoding', h + 0.25, CAST(h AS DECIMAL(38, 12)) / 8, 'USD',
                CASE WHEN h % 2 = 0 THEN 'alpha' END, 'pm-1', CASE WHEN h % 3 = 0 THEN 'Main' ELSE '' END,
                CASE WHEN h = 4 THEN 'license' END, uuidv7(), now()::TIMESTAMP
         FROM range(8) r(h)`,
		`UPDATE usage SET solution = CASE WHEN h % 3 = 1 THEN 'Streaming' END, unit = CASE WHEN h % 2 = 1 THEN 'minutes' END
         FROM (SELECT rowid AS r, row_number() OVER (ORDER BY date) AS h FROM usage) n WHERE usage.rowid = n.r`,
	)
	if version > dayTotalsVersion {
		// What 0011 filled: the old columns' sums of these rows.
		if _, err := old.DB().ExecContext(ctx, `INSERT INTO daily_usage_totals (basis, granularity, month, next_month, day, date_month, meter_name, currency, paid_as, rows)
SELECT basis, granularity, DATE '2026-03-01', DATE '2026-04-01', CAST(date AS DATE), DATE '2026-03-01', meter_name, currency, 'direct', count(*) FROM usage GROUP BY ALL`); err != nil {
			t.Fatal(err)
		}
	}
	// What the older Tally's loads kept in daily_usage_cost, which the
	// anomalies' baselines are filled from.
	dayCost, err := tallysql.Inline(`INSERT INTO daily_usage_cost (organization, day, project, payment_method, family, meter_name, currency, cost)
SELECT organization, day, project, payment_method, family, meter_name, currency, cost FROM usage_day_cost`)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := old.DB().ExecContext(ctx, dayCost); err != nil {
		t.Fatal(err)
	}
	old.Close()
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	kept, want := dayTotals(t, s)
	if len(want) < 5 {
		t.Fatalf("usage_day_totals from the rows: %q; the fixture has five or more day totals", want)
	}
	equalLines(t, "daily_usage_totals after the migration", kept, want)
	kb, wb := baselines(t, s)
	if len(wb) == 0 {
		t.Fatal("the anomalies' baselines from the rows are empty")
	}
	equalLines(t, "daily_baselines after the migration", kb, wb)
	inOrder := rowsText(t, s, `SELECT count(*) FROM (SELECT month, lag(month) OVER (ORDER BY rowid) AS prev FROM daily_usage_totals) WHERE month < prev`)
	if inOrder[0] != "0" {
		t.Fatalf("daily_usage_totals is not in month order: %s rows follow a later month", inOrder[0])
	}
	if n := count(t, s, `SELECT count(DISTINCT month) FROM daily_usage_totals`); n != 2 {
		t.Fatalf("daily_usage_totals holds %d months; the fixture has two", n)
	}
}

// TestMonthFilterReachesTheTotals: an analyst's WHERE month = … on the
// monthly views is a condition on daily_usage_totals' stored month (and,
// for the month-over-month comparison, next_month) in the table's scan,
// where DuckDB's zone maps skip the other months, not a filter applied
// after every month is summed.
func TestMonthFilterReachesTheTotals(t *testing.T) {
	s := monthlyFixture(t)
	type node struct {
		Name      string          `json:"name"`
		Children  []node          `json:"children"`
		ExtraInfo json.RawMessage `json:"extra_info"`
	}
	type scan struct {
		Table   string `json:"Table"`
		Filters any    `json:"Filters"`
	}
	for view, want := range map[string][]string{
		"project_monthly_cost":  {"month='2026-09-01'::DATE"},
		"entitlement_coverage":  {"month='2026-09-01'::DATE"},
		"rate_card_variance":    {"month='2026-09-01'::DATE"},
		"cost_month_over_month": {"month='2026-09-01'::DATE", "next_month='2026-09-01'::DATE"},
	} {
		var plan string
		if err := s.db.QueryRowContext(context.Background(), `EXPLAIN (FORMAT json) SELECT * FROM `+view+` WHERE month = DATE '2026-09-01'`).Scan(new(string), &plan); err != nil {
			t.Fatal(err)
		}
		var roots []node
		if err := json.Unmarshal([]byte(plan), &roots); err != nil {
			t.Fatalf("%s: read plan: %v", view, err)
		}
		var filters []string
		var walk func(n node)
		walk = func(n node) {
			var sc scan
			if json.Unmarshal(n.ExtraInfo, &sc) == nil && strings.HasSuffix(sc.Table, ".daily_usage_totals") {
				filters = append(filters, fmt.Sprint(sc.Filters))
			}
			for _, c := range n.Children {
				walk(c)
			}
		}
		for _, r := range roots {
			walk(r)
		}
		for _, w := range want {
			found := false
			for _, f := range filters {
				found = found || strings.Contains(f, w) && !strings.Contains(f, "next_"+w)
			}
			if !found {
				t.Errorf("%s WHERE month = DATE '2026-09-01': no scan of daily_usage_totals filters on %s; its scans' filters: %q", view, w, filters)
			}
		}
	}
}

// TestViewsAsTheirDefinitions: every view gives, in the database (where
// usage_day_totals, meter_months and meter_skus read the table the load
// keeps), exactly the rows its definition in sql/views gives when
// inlined, computed from the usage rows, as the workbook and the export
// read them.
func TestViewsAsTheirDefinitions(t *testing.T) {
	ctx := context.Background()
	s := monthlyFixture(t)
	if _, err := s.db.ExecContext(ctx, `INSERT INTO month_closes (id, month, basis, granularity, action, acted_at, who)
VALUES (uuid(), DATE '2026-08-01', 'usage', 'day', 'close', TIMESTAMP '2026-09-02', 'test')`); err != nil {
		t.Fatal(err)
	}
	views, err := Views()
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range views {
		q, err := tallysql.Inline(`SELECT * FROM ` + v.Name + ` ORDER BY ALL`)
		if err != nil {
			t.Fatal(err)
		}
		r, err := s.db.QueryContext(ctx, q)
		if err != nil {
			t.Fatalf("%s inlined: %v", v.Name, err)
		}
		want := lines(t, r)
		equalLines(t, v.Name, viewLines(t, s, v.Name), want)
	}
	for _, v := range []string{"meter_months", "meter_skus", "usage_day_totals", "rate_card_matches", "focus"} {
		if n := count(t, s, `SELECT count(*) FROM `+v); n == 0 {
			t.Errorf("%s has no rows: the comparison compares nothing", v)
		}
	}
}

// TestBaselinesKeptAcrossLoadsSideBySide: windows of one organization
// loaded at once (each rewriting its days and, after it commits, the
// baselines of the 28 days after them, which the others' share) all load,
// and the baselines end as the committed days say. Baselines a kill left
// unwritten after their load committed are rewritten by the next writer
// to open the store.
func TestBaselinesKeptAcrossLoadsSideBySide(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "tally.duckdb")
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	srv := sim.New(sim.Options{Seed: 7, Start: exportStart, Now: func() time.Time { return exportNow }})
	var qs []tally.UsageQuery
	for d := date(t, "2026-08-01"); d.Before(date(t, "2026-10-21")); d = d.AddDate(0, 0, 5) {
		qs = append(qs, tally.UsageQuery{Window: tally.Window{Start: d, End: d.AddDate(0, 0, 5), Granularity: tally.Day}})
	}
	for round, extra := range []string{"0", "3.25"} {
		errs := make(chan error, len(qs))
		for _, q := range qs {
			rows := srv.Rows(q)
			for i := range rows {
				rows[i].Cost = rows[i].Cost.Add(tally.MustDecimal(extra))
			}
			go func() {
				_, err := s.LoadWindow(ctx, q, NewRunID(), rowsOf(rows...))
				errs <- err
			}()
		}
		for range qs {
			if err := <-errs; err != nil {
				t.Fatalf("round %d: a load side by side failed: %v", round, err)
			}
		}
		kb, wb := baselines(t, s)
		if len(wb) == 0 {
			t.Fatal("the anomalies' baselines from the rows are empty")
		}
		equalLines(t, fmt.Sprintf("round %d: daily_baselines after %d loads side by side", round, len(qs)), kb, wb)
		if n := count(t, s, `SELECT count(*) FROM baseline_dirty`); n != 0 {
			t.Errorf("round %d: %d ranges left in baseline_dirty", round, n)
		}
	}

	// A kill after a load committed and before its baselines were
	// rewritten: the range is listed, the baselines stale.
	from, to := date(t, "2026-09-10"), date(t, "2026-09-12")
	if err := s.inTx(ctx, func(conn *sql.Conn) error {
		if _, err := conn.ExecContext(ctx, `UPDATE usage SET cost = cost * 2 WHERE date >= ? AND date < ?`, from, to); err != nil {
			return err
		}
		if err := refreshAllDayCost(ctx, conn, from, to); err != nil {
			return err
		}
		_, err := conn.ExecContext(ctx, `INSERT INTO baseline_dirty (organization, from_day, to_day) SELECT DISTINCT organization, ?, ? FROM daily_usage_cost`, from, to)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if kb, wb := baselines(t, s); strings.Join(kb, "\n") == strings.Join(wb, "\n") {
		t.Fatal("the stale baselines already agree: the test changes nothing")
	}
	s.Close()
	if s, err = Open(ctx, path); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	kb, wb := baselines(t, s)
	equalLines(t, "daily_baselines after the next writer opened the store", kb, wb)
}

// TestKeptTablesFilledAMonthAtATime: the tables the load keeps, emptied
// and listed to fill (as a migration leaves them), are filled a month at a
// time; a kill between two months' transactions leaves them listed with
// the month reached, and the next writer to open the store fills the rest,
// to exactly the rows computed from usage.
func TestKeptTablesFilledAMonthAtATime(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "tally.duckdb")
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`INSERT INTO fetch_windows (organization, granularity, basis, scope, start, "end", rows, run_id, fetched_at)
         VALUES ('org', 'hour', 'usage', 'all', DATE '2026-01-01', DATE '2026-04-01', 0, uuidv7(), now()::TIMESTAMP),
                ('org', 'day', 'reported', 'all', DATE '2026-01-01', DATE '2026-04-01', 0, uuidv7(), now()::TIMESTAMP)`,
		// Three months of hours, a project's cost doubling in March, and
		// rows of basis reported charged in the month after.
		`INSERT INTO usage (organization, granularity, basis, date, date_processed, meter_name, quantity, cost, currency, project, payment_method, run_id, fetched_at)
         SELECT 'org', 'hour', 'usage', TIMESTAMP '2026-01-01' + to_hours(h * 7), TIMESTAMP '2026-01-01' + to_hours(h * 7 + 30),
                CASE WHEN h % 3 = 0 THEN 'encoding' ELSE 'storage' END, h, CAST(h % 11 AS DECIMAL(38, 12)) * CASE WHEN h > 240 THEN 2 ELSE 1 END / 4,
                'USD', CASE WHEN h % 2 = 0 THEN 'alpha' END, 'pm-1', uuidv7(), now()::TIMESTAMP
         FROM range(300) r(h)`,
		`INSERT INTO usage (organization, granularity, basis, date, date_processed, meter_name, quantity, cost, currency, project, payment_method, run_id, fetched_at)
         SELECT 'org', 'day', 'reported', TIMESTAMP '2026-01-01' + to_days(d), TIMESTAMP '2026-01-01' + to_days(d + 45),
                'encoding', d, CAST(d AS DECIMAL(38, 12)) / 3, 'USD', 'beta', 'pm-1', uuidv7(), now()::TIMESTAMP
         FROM range(60) r(d)`,
	} {
		if _, err := s.db.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	// Rows written here, not loaded, are numbered now, so the reopen's
	// only fills are the kept tables'.
	if err := s.KeyUsage(ctx); err != nil {
		t.Fatal(err)
	}
	check := func(s *Store, when string) {
		t.Helper()
		kept, want := dayTotals(t, s)
		equalLines(t, "daily_usage_totals "+when, kept, want)
		if n := count(t, s, `SELECT count(DISTINCT month) FROM daily_usage_totals`); n != 4 {
			t.Fatalf("daily_usage_totals holds %d months %s; the fixture's period_at spans four", n, when)
		}
		kb, wb := baselines(t, s)
		equalLines(t, "daily_baselines "+when, kb, wb)
		dayCost, err := tallysql.Inline(`SELECT concat_ws('|', organization, day, project, payment_method, family, meter_name, currency, cost) FROM usage_day_cost ORDER BY ALL`)
		if err != nil {
			t.Fatal(err)
		}
		equalLines(t, "daily_usage_cost "+when,
			rowsText(t, s, `SELECT concat_ws('|', organization, day, project, payment_method, family, meter_name, currency, cost) FROM daily_usage_cost ORDER BY ALL`),
			rowsText(t, s, dayCost))
		if n := count(t, s, `SELECT count(*) FROM kept_refills`); n != 0 {
			t.Fatalf("%d tables still listed to fill %s", n, when)
		}
	}
	if err := s.RefillKept(ctx); err != nil {
		t.Fatal(err)
	}
	check(s, "after RefillKept")
	if n := count(t, s, `SELECT count(*) FROM daily_baselines WHERE baseline_days = 28`); n == 0 {
		t.Fatal("no baseline reads 28 days: the fixture does not reach across months")
	}

	// A kill after the day cost's first month and the totals' first two:
	// what those transactions committed, and nothing of the months after.
	if err := s.markRefills(ctx); err != nil {
		t.Fatal(err)
	}
	for kept, n := range map[string]int{keptDayCost: 1, keptTotals: 2} {
		months, err := keptMonths(ctx, s.db, kept)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range months[:n] {
			if err := s.inTx(ctx, func(conn *sql.Conn) error {
				if err := fillMonth(ctx, conn, kept, m); err != nil {
					return err
				}
				_, err := conn.ExecContext(ctx, `UPDATE kept_refills SET done_before = CAST(? AS DATE) WHERE kept = ?`, m.month.AddDate(0, 1, 0), kept)
				return err
			}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if n := count(t, s, `SELECT count(*) FROM kept_refills WHERE done_before IS NOT NULL`); n != 2 {
		t.Fatalf("%d tables note the month reached, want 2", n)
	}
	s.Close()
	var heard []FillProgress
	s, err = Open(ctx, path, Notify(func(p FillProgress) { heard = append(heard, p) }))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	check(s, "after the reopen")
	// The reopen tells of each month it fills, in order, from the month
	// after the one a fill reached: the day cost from February, the
	// totals from March, the baselines (not begun) from January.
	first := map[string]string{keptDayCost: "2026-02", keptTotals: "2026-03", keptBaselines: "2026-01"}
	var order []string
	for i, p := range heard {
		if i == 0 || heard[i-1].Table != p.Table {
			order = append(order, p.Table)
			if got := p.Month.Format("2006-01"); got != first[p.Table] {
				t.Errorf("the reopen's fill of %s began at %s, want %s", p.Table, got, first[p.Table])
			}
			if p.Done != 1 {
				t.Errorf("the first month of %s is told as %d done", p.Table, p.Done)
			}
		} else if !p.Month.After(heard[i-1].Month) || p.Done != heard[i-1].Done+1 || p.Months != heard[i-1].Months {
			t.Errorf("%s: month %s (%d of %d) after %s (%d of %d)", p.Table, p.Month.Format("2006-01"), p.Done, p.Months,
				heard[i-1].Month.Format("2006-01"), heard[i-1].Done, heard[i-1].Months)
		}
		if last := i == len(heard)-1 || heard[i+1].Table != p.Table; last && p.Done != p.Months {
			t.Errorf("%s: the fill ended told %d of %d months", p.Table, p.Done, p.Months)
		}
	}
	if strings.Join(order, ",") != strings.Join(keptOrder, ",") {
		t.Errorf("the reopen told of fills of %v, want %v", order, keptOrder)
	}
}
