package store

import (
	"context"
	"fmt"
	"io/fs"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/tally-dev/tally"
	tallysql "github.com/tally-dev/tally/sql"
)

// dayViewsBefore are payment_method_violations and meter_daily_cost as
// they were defined before they read the daily totals the load keeps
// instead of every usage row (allocation_charges: usage_finest's rows),
// and forecast_days and forecasts before
// forecast_days summed scope_daily_cost once instead of for each of its
// five reads (issue 23), each named <view>_before.
var dayViewsBefore = map[string]string{
	"allocation_charges": `CREATE OR REPLACE VIEW allocation_charges_before AS
SELECT {'organization': organization, 'basis': basis, 'month': CAST(date_trunc('month', period_at) AS DATE)} AS period, -- the partition: organization, basis and month
       organization, -- the organization (organizations.name)
       basis, -- usage or reported
       CAST(date_trunc('month', period_at) AS DATE) AS month, -- first day of the month, UTC
       currency, -- ISO 4217 code; never added to another currency
       project, -- project name
       meter_name, -- the meter
       family, -- the meter's family
       payment_method, -- payment method id
       paid_as, -- direct, balance, license or other, as usage_rows
       sum(cost) AS cost, -- usage value, exact
       sum(CAST(quantity AS DECIMAL(38, 12))) AS quantity -- units accrued
FROM usage_finest
GROUP BY ALL`,
	"payment_method_violations": `CREATE OR REPLACE VIEW payment_method_violations_before AS
WITH v AS (
    SELECT v.*
    FROM usage_validity v
    SEMI JOIN usage_coverage c
        ON c.organization = v.organization AND c.basis = v.basis AND c.granularity = v.granularity AND c.day = CAST(v.period_at AS DATE)
),
-- The rows are summed per validity and method before their problems are
-- listed: the list is the same for all of them, and made once per group
-- rather than once per row. Sums of sums are exact (DECIMAL).
g AS (
    SELECT organization, basis, pm_month, payment_method, pm_display_name, pm_type, validity, method_problems,
           valid_from, valid_until, pm_is_active, pm_terms_accepted, pm_auto_purchase_stream_licenses, currency,
           min(nullif(payment_method_name, '')) AS payment_method_name,
           min(date) AS first_at,
           max(date) AS last_at,
           count(*) AS rows,
           sum(cost) AS cost,
           sum(CASE WHEN streaming_auto_purchase THEN cost ELSE 0 END) AS streaming_auto_purchase
    FROM v
    GROUP BY ALL
),
p AS (
    SELECT g.*, unnest(
               CASE g.validity
                   WHEN 'valid' THEN []
                   WHEN 'cannot tell' THEN ['cannot tell at this granularity']
                   ELSE [g.validity]
               END || g.method_problems) AS problem
    FROM g
)
SELECT organization,
       basis,
       pm_month AS month,
       payment_method,
       coalesce(nullif(pm_display_name, ''), min(payment_method_name)) AS payment_method_name,
       pm_type AS type,
       problem,
       problem <> 'cannot tell at this granularity' AS violation,
       valid_from,
       valid_until,
       pm_is_active AS is_active,
       pm_terms_accepted AS terms_accepted,
       pm_auto_purchase_stream_licenses AS auto_purchase_stream_licenses,
       currency,
       CAST(min(first_at) AS DATE) AS first_day,
       CAST(max(last_at) AS DATE) AS last_day,
       CAST(sum(rows) AS BIGINT) AS rows,
       sum(cost) AS cost,
       sum(streaming_auto_purchase) AS streaming_auto_purchase
FROM p
GROUP BY organization, basis, pm_month, payment_method, pm_display_name, pm_type, problem, valid_from, valid_until,
         pm_is_active, pm_terms_accepted, pm_auto_purchase_stream_licenses, currency`,
	"forecast_days": `CREATE OR REPLACE VIEW forecast_days_before AS
WITH latest AS (
    SELECT max(day) - 1 AS as_of FROM scope_daily_cost
),
series AS (
    -- Every month with usage, and the current month for every scope with
    -- usage in the 28 days the forecast learns from, even before its
    -- first cost of the month arrives.
    SELECT DISTINCT scope_kind, scope, currency, CAST(date_trunc('month', day) AS DATE) AS month
    FROM scope_daily_cost, latest
    WHERE day <= as_of + 1
    UNION
    SELECT DISTINCT scope_kind, scope, currency, CAST(date_trunc('month', as_of + 1) AS DATE)
    FROM scope_daily_cost, latest
    WHERE day > as_of - 28 AND day <= as_of
),
days AS (
    SELECT s.*, CAST(g.d AS DATE) AS day, a.as_of
    FROM series s, latest a,
         generate_series(CAST(s.month AS TIMESTAMP), CAST(s.month + INTERVAL 1 MONTH - INTERVAL 1 DAY AS TIMESTAMP), INTERVAL 1 DAY) AS g(d)
),
profile AS (
    SELECT scope_kind, scope, currency, isodow(day) AS dow, CAST(sum(cost) / 4 AS DECIMAL(38, 12)) AS rate
    FROM scope_daily_cost, latest
    WHERE day > as_of - 28 AND day <= as_of
    GROUP BY ALL
)
SELECT d.month, -- first day of the month
       d.scope_kind, -- all, project, payment_method or family
       d.scope, -- the project, payment method id or family; '' for all
       d.currency,
       d.day, -- the UTC day
       CASE WHEN d.day <= d.as_of THEN 'actual' ELSE 'forecast' END AS kind, -- actual: what it cost; forecast: expected
       CASE WHEN d.day <= d.as_of THEN coalesce(c.cost, 0)
            ELSE greatest(coalesce(p.rate, 0), coalesce(c.cost, 0)) END AS cost, -- the day's cost, or its forecast (never below what it cost so far)
       d.as_of -- the last complete day of the data
FROM days d
LEFT JOIN scope_daily_cost c
       ON c.scope_kind = d.scope_kind AND c.scope = d.scope AND c.currency = d.currency AND c.day = d.day
LEFT JOIN profile p
       ON p.scope_kind = d.scope_kind AND p.scope = d.scope AND p.currency = d.currency AND p.dow = isodow(d.day)
WHERE d.day <= d.as_of OR d.month = CAST(date_trunc('month', d.as_of + 1) AS DATE)`,
	"forecasts": `CREATE OR REPLACE VIEW forecasts_before AS
WITH spent AS (
    -- Each month's cost so far: one pass over the days, joined below,
    -- rather than a sum per scope and month.
    SELECT CAST(date_trunc('month', day) AS DATE) AS month, scope_kind, scope, currency, sum(cost) AS cost
    FROM scope_daily_cost
    GROUP BY ALL
)
SELECT f.month, -- first day of the month
       f.scope_kind, -- all, project, payment_method, family or cost_centre
       f.scope, -- the project, payment method id, family or cost centre; '' for all
       f.currency,
       any_value(f.as_of) AS as_of, -- the last complete day of the data
       coalesce(any_value(s.cost), 0) AS actual_cost, -- cost so far, the latest partial day included
       sum(f.cost) FILTER (WHERE f.kind = 'actual') AS cost_to_as_of, -- cost of the complete days
       count(*) FILTER (WHERE f.kind = 'forecast') AS forecast_days, -- days still forecast
       CAST(sum(f.cost) AS DECIMAL(38, 6)) AS forecast_cost -- the expected month-end cost
FROM forecast_days_before f
LEFT JOIN spent s
       ON s.month = f.month AND s.scope_kind = f.scope_kind AND s.scope = f.scope AND s.currency = f.currency
GROUP BY f.month, f.scope_kind, f.scope, f.currency`,
	"meter_daily_cost": `CREATE OR REPLACE VIEW meter_daily_cost_before AS
WITH finest AS (
    SELECT organization,
           basis,
           arg_min(granularity, CASE granularity WHEN 'hour' THEN 1 ELSE 2 END) AS granularity
    FROM usage
    WHERE granularity IN ('hour', 'day')
    GROUP BY organization, basis
),
u AS (
    SELECT u.*,
           CASE WHEN u.basis = 'reported' THEN u.date_processed ELSE u.date END AS period_at
    FROM usage u
    JOIN finest f ON f.organization = u.organization AND f.basis = u.basis AND f.granularity = u.granularity
)
SELECT organization,
       basis,
       granularity,
       CAST(period_at AS DATE) AS day,
       meter_name,
       unit,
       currency,
       count(*) AS rows,
       sum(quantity) AS quantity,
       sum(cost) AS cost
FROM u
GROUP BY organization, basis, granularity, CAST(period_at AS DATE), meter_name, unit, currency`,
}

// costByMeterDayBefore is the named query cost_by_meter_day as it was
// before it summed usage_day_totals instead of the usage rows.
const costByMeterDayBefore = `SELECT basis,
       date_trunc('day', date)::DATE AS day,
       meter_name,
       unit,
       currency,
       sum(quantity) AS quantity,
       sum(cost) AS cost,
       count(*) AS rows
FROM usage
WHERE granularity = (
    SELECT CASE WHEN bool_or(granularity = 'hour') THEN 'hour' ELSE 'day' END
    FROM usage
    WHERE granularity IN ('hour', 'day')
)
GROUP BY ALL
ORDER BY basis, day, meter_name, unit, currency;`

// dayViewsFixture is monthlyFixture with more of what
// payment_method_violations and meter_daily_cost tell apart: September
// fetched again with fewer rows, a second organization (its own payment
// methods, one day of October fetched hourly over its days), methods
// whose validity starts in August and ends inside the hourly days of
// October, one that ends before it starts without accepted terms, one
// that buys streaming licenses, and hourly rows off their hour's start
// (as only rows written by other means can be, whose totals
// RefreshDayTotals rebuilds), whose day is judged row by row.
func dayViewsFixture(t *testing.T) *Store {
	t.Helper()
	ctx := context.Background()
	s, srv := monthlyFixtureServer(t)
	sep := tally.UsageQuery{Window: window(t, tally.Day, "2026-09-01", "2026-10-01")}
	rows := srv.Rows(sep)
	load(t, s, sep, rows[:len(rows)*2/3]...)
	for _, q := range []tally.UsageQuery{
		{Window: window(t, tally.Day, "2026-09-20", "2026-10-20"), Organization: "Beta"},
		{Window: window(t, tally.Hour, "2026-10-06", "2026-10-07"), Organization: "Beta"},
	} {
		rows := srv.Rows(q)
		for i := range rows {
			rows[i].Cost = rows[i].Cost.Add(tally.MustDecimal("0.25"))
			rows[i].Quantity *= 3
		}
		load(t, s, q, rows...)
	}
	pm := func(rank int) string {
		return rowsText(t, s, fmt.Sprintf(`SELECT id FROM (SELECT DISTINCT id FROM payment_method_snapshots) ORDER BY id LIMIT 1 OFFSET %d`, rank))[0]
	}
	streaming := rowsText(t, s, `SELECT min(payment_method) FROM usage WHERE lower(solution) = 'streaming'`)[0]
	for _, q := range []string{
		`INSERT INTO payment_method_snapshots SELECT * REPLACE ('Beta' AS organization) FROM payment_method_snapshots WHERE organization = ''`,
		`UPDATE payment_method_snapshots SET start_date = DATE '2026-08-20', end_date = DATE '2026-10-07' WHERE id = '` + pm(0) + `'`,
		`UPDATE payment_method_snapshots SET start_date = DATE '2026-09-15', end_date = DATE '2026-09-01', terms_and_conditions_accepted = false WHERE id = '` + pm(1) + `'`,
		`UPDATE payment_method_snapshots SET auto_purchase_stream_licenses = true WHERE id = '` + streaming + `'`,
		// Rows half an hour into their hour, on the hourly days of the
		// first method's end: the last of 6 October straddles it.
		`INSERT INTO usage SELECT * REPLACE (date + INTERVAL 30 MINUTE AS date, cost + 1 AS cost)
FROM usage WHERE organization = '' AND granularity = 'hour' AND payment_method = '` + pm(0) + `'
  AND date IN (TIMESTAMP '2026-10-06 05:00', TIMESTAMP '2026-10-06 23:00', TIMESTAMP '2026-10-07 02:00')`,
	} {
		if _, err := s.db.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if err := s.RefreshDayTotals(ctx); err != nil {
		t.Fatal(err)
	}
	return s
}

// TestDayViewsAsBefore: payment_method_violations, meter_daily_cost and
// the named query cost_by_meter_day, now summing the daily totals the load
// keeps, give exactly the rows of their former definitions, in all and
// for each month asked (WHERE month = …, or the month's days).
func TestDayViewsAsBefore(t *testing.T) {
	ctx := context.Background()
	s := dayViewsFixture(t)
	// In name order: forecast_days_before before forecasts_before, which reads it.
	names := slices.Sorted(maps.Keys(dayViewsBefore))
	for _, name := range names {
		if _, err := s.db.ExecContext(ctx, dayViewsBefore[name]); err != nil {
			t.Fatal(err)
		}
	}
	// The fixture must give the views something of each kind to tell.
	equalLines(t, "problems", rowsText(t, s, `SELECT DISTINCT problem FROM payment_method_violations_before ORDER BY 1`),
		[]string{"before start", "cannot tell at this granularity", "end not after start", "inactive", "on or after end", "terms not accepted"})
	equalLines(t, "organizations and bases", rowsText(t, s, `SELECT DISTINCT organization || '/' || basis FROM payment_method_violations_before ORDER BY 1`),
		[]string{"/estimated", "/reported", "/usage", "Beta/usage"})
	if n := count(t, s, `SELECT count(*) FROM payment_method_violations_before WHERE streaming_auto_purchase > 0`); n == 0 {
		t.Fatal("no streaming bought by licenses: the fixture tells less than it should")
	}
	equalLines(t, "granularities by day", rowsText(t, s, `SELECT DISTINCT organization || '/' || basis || '/' || granularity FROM meter_daily_cost_before ORDER BY 1`),
		[]string{"/estimated/day", "/reported/day", "/usage/hour", "Beta/usage/hour"})
	for _, view := range names {
		want, got := viewLines(t, s, view+"_before"), viewLines(t, s, view)
		if len(want) < 10 {
			t.Fatalf("%s_before has %d rows; the fixture holds more", view, len(want))
		}
		if view == "forecast_days" {
			// recorded_cost is new: forecasts sums it; last_usage_day and
			// last_fetched_day are new: the labels name them.
			got = viewLines(t, s, "(SELECT * EXCLUDE (recorded_cost, last_usage_day, last_fetched_day) FROM "+view+")")
		}
		if view == "forecasts" {
			got = viewLines(t, s, "(SELECT * EXCLUDE (last_usage_day, last_fetched_day) FROM "+view+")")
		}
		if view == "meter_daily_cost" {
			sameQuantities(t, s, view, view+"_before", "organization, basis, granularity, day, meter_name, unit, currency")
			want, got = viewLines(t, s, "(SELECT * EXCLUDE (quantity) FROM "+view+"_before)"), viewLines(t, s, "(SELECT * EXCLUDE (quantity) FROM "+view+")")
		}
		equalLines(t, view, got, want)
		t.Logf("%s: %d rows, the same", view, len(got))
	}
	for _, m := range rowsText(t, s, `SELECT DISTINCT month FROM payment_method_violations_before ORDER BY 1`) {
		q := `SELECT * FROM %s WHERE month = DATE '` + m + `' ORDER BY ALL`
		equalLines(t, "payment_method_violations in "+m, rowsText(t, s, fmt.Sprintf(q, "payment_method_violations")),
			rowsText(t, s, fmt.Sprintf(q, "payment_method_violations_before")))
		q = `SELECT * EXCLUDE (quantity) FROM %s WHERE day >= DATE '` + m + `' AND day < DATE '` + m + `' + INTERVAL 1 MONTH ORDER BY ALL`
		equalLines(t, "meter_daily_cost in "+m, rowsText(t, s, fmt.Sprintf(q, "meter_daily_cost")),
			rowsText(t, s, fmt.Sprintf(q, "meter_daily_cost_before")))
	}
	text, err := fs.ReadFile(tallysql.Queries, "queries/cost_by_meter_day.sql")
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{costByMeterDayBefore, string(text)} {
		name := map[bool]string{true: "cost_by_meter_day_before", false: "cost_by_meter_day_now"}[q == costByMeterDayBefore]
		if _, err := s.db.ExecContext(ctx, `CREATE VIEW `+name+` AS `+strings.TrimSuffix(strings.TrimSpace(q), ";")); err != nil {
			t.Fatal(err)
		}
	}
	want := rowsText(t, s, costByMeterDayBefore)
	if len(want) < 10 {
		t.Fatalf("cost_by_meter_day before: %d rows; the fixture holds more", len(want))
	}
	sameQuantities(t, s, "cost_by_meter_day_now", "cost_by_meter_day_before", "basis, day, meter_name, unit, currency")
	equalLines(t, "cost_by_meter_day", viewLines(t, s, "(SELECT * EXCLUDE (quantity) FROM cost_by_meter_day_now)"),
		viewLines(t, s, "(SELECT * EXCLUDE (quantity) FROM cost_by_meter_day_before)"))
}

// sameQuantities fails unless views a and b have the same keys, each
// with the same quantity but for a DOUBLE sum's last digits: the former
// definitions added the rows' DOUBLE quantities in whatever order the
// rows came, the new ones give the exact sum of the rows' quantities as
// the nearest DOUBLE.
func sameQuantities(t *testing.T, s *Store, a, b, keys string) {
	t.Helper()
	var on []string
	for _, k := range strings.Split(keys, ", ") {
		on = append(on, "a."+k+" IS NOT DISTINCT FROM b."+k)
	}
	diff := rowsText(t, s, `SELECT count(*) FILTER (WHERE a.quantity IS NULL OR b.quantity IS NULL
                              OR abs(a.quantity - b.quantity) > 1e-12 * greatest(1, abs(b.quantity))),
       count(*) FILTER (WHERE a.quantity <> b.quantity)
FROM `+a+` a FULL JOIN `+b+` b ON `+strings.Join(on, " AND "))
	var off, last int
	if _, err := fmt.Sscanf(diff[0], "%d|%d", &off, &last); err != nil {
		t.Fatalf("%s against %s: %q", a, b, diff)
	}
	if off > 0 {
		t.Fatalf("%s against %s: %d keys without the same quantity", a, b, off)
	}
	t.Logf("%s: every quantity as %s's, %d in their last digits only", a, b, last)
}
