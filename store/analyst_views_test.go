package store

import (
	"context"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The analyst views, checked against the export fixture: the simulated
// organization's usage of August to 20 October 2026 (day granularity), its
// rate cards snapshotted on 10 August and, every price raised, on 5
// October.

func TestCostViewsAddUp(t *testing.T) {
	s, _ := exportFixture(t)
	total := rowsText(t, s, `SELECT currency, count(*), sum(cost) FROM usage GROUP BY ALL ORDER BY ALL`)
	equalLines(t, "project_monthly_cost totals",
		rowsText(t, s, `SELECT currency, sum(rows), sum(cost) FROM project_monthly_cost GROUP BY ALL ORDER BY ALL`), total)
	equalLines(t, "meter_daily_cost totals",
		rowsText(t, s, `SELECT currency, sum(rows), sum(cost) FROM meter_daily_cost GROUP BY ALL ORDER BY ALL`), total)
	equalLines(t, "entitlement_coverage totals",
		rowsText(t, s, `SELECT currency, sum(rows), sum(billed_directly + from_balance + license_covered + other_entitlement) FROM entitlement_coverage GROUP BY ALL ORDER BY ALL`), total)
	equalLines(t, "project_monthly_cost billed cost",
		rowsText(t, s, `SELECT month, project, currency, billed_cost FROM project_monthly_cost ORDER BY ALL`),
		rowsText(t, s, `SELECT CAST(date_trunc('month', date) AS DATE), project, currency,
       coalesce(sum(cost) FILTER (WHERE entitlement_type IS NULL OR entitlement_type NOT IN ('license', 'cash', 'quantity', 'pre-commitment')), 0)
FROM usage GROUP BY ALL ORDER BY ALL`))
	// A meter's day is the sum of its rows that day.
	equalLines(t, "one meter's day",
		rowsText(t, s, `SELECT currency, quantity, cost FROM meter_daily_cost WHERE day = '2026-09-03' AND meter_name = 'video_encoding_ondemand' ORDER BY ALL`),
		rowsText(t, s, `SELECT currency, sum(quantity), sum(cost) FROM usage WHERE CAST(date AS DATE) = '2026-09-03' AND meter_name = 'video_encoding_ondemand' GROUP BY ALL ORDER BY ALL`))
	// Only license rows: all covered.
	for _, r := range rowsText(t, s, `SELECT covered_share FROM entitlement_coverage WHERE license_covered = cost AND cost <> 0`) {
		if r != "1" {
			t.Errorf("license-only coverage is %s, want 1", r)
		}
	}
	if n := count(t, s, `SELECT count(*) FROM entitlement_coverage WHERE license_covered = cost AND cost <> 0`); n == 0 {
		t.Error("the fixture has no group covered by a license alone")
	}
}

func TestRateCardVarianceView(t *testing.T) {
	s, _ := exportFixture(t)
	// The sim bills storage 3 % above its card; the encoding and live
	// meters at their card price; the DRM meter has no price.
	for _, r := range rowsText(t, s, `SELECT month, currency, status, variance_pct FROM rate_card_variance
WHERE meter_name = 'storage_gb_hours' AND month < '2026-10-01' ORDER BY ALL`) {
		f := strings.Split(r, "|")
		pct, err := strconv.ParseFloat(f[3], 64)
		if f[2] != "variance" || err != nil || math.Abs(pct-0.03) > 1e-9 {
			t.Errorf("storage %s: want a 3 %% variance", r)
		}
	}
	if got := distinct(t, s, "status", `rate_card_variance WHERE meter_name IN ('video_encoding_ondemand', 'video_encoding_uhd', 'live_channel_minutes') AND month < '2026-10-01'`); !slices.Equal(got, []string{"ok"}) {
		t.Errorf("meters billed at their card price have status %v", got)
	}
	if got := distinct(t, s, "status || ':' || coalesce(matched_by, '-')", `rate_card_variance WHERE meter_name = 'drm_license_requests'`); !slices.Equal(got, []string{"no price:-"}) {
		t.Errorf("the unpriced meter: %v", got)
	}
	// October uses the second card, every price raised: nothing is ok.
	if got := distinct(t, s, "status", `rate_card_variance WHERE month = '2026-10-01' AND meter_name <> 'drm_license_requests' AND quantity <> 0`); !slices.Equal(got, []string{"variance"}) {
		t.Errorf("October against the raised card: %v", got)
	}
	// Billed cost per currency is all there, compared or not.
	equalLines(t, "billed in the variance view",
		rowsText(t, s, `SELECT currency, sum(cost) FROM rate_card_variance GROUP BY ALL ORDER BY ALL`),
		rowsText(t, s, `SELECT currency, sum(cost) FROM usage GROUP BY ALL ORDER BY ALL`))
	equalLines(t, "variance is billed minus expected",
		rowsText(t, s, `SELECT count(*) FROM rate_card_variance WHERE variance <> cost - CAST(quantity * card_price AS DECIMAL(38, 12))`), []string{"0"})
}

func TestPaymentMethodViolationsView(t *testing.T) {
	s, _ := exportFixture(t)
	// The legacy method expired 40 days after the sim's start (10 September)
	// while the archive project stayed billed to it.
	got := rowsText(t, s, `SELECT month, payment_method_name, problem, valid_until, first_day, last_day FROM payment_method_violations ORDER BY ALL`)
	// The legacy method is inactive as well: every month it is charged
	// is flagged for that, besides the days after its end.
	want := []string{
		"2026-08-01|Legacy EU agreement|inactive|2026-09-10|2026-08-01|2026-08-31",
		"2026-09-01|Legacy EU agreement|inactive|2026-09-10|2026-09-01|2026-09-30",
		"2026-09-01|Legacy EU agreement|on or after end|2026-09-10|2026-09-10|2026-09-30",
		"2026-10-01|Legacy EU agreement|inactive|2026-09-10|2026-10-01|2026-10-20",
		"2026-10-01|Legacy EU agreement|on or after end|2026-09-10|2026-10-01|2026-10-20",
	}
	equalLines(t, "violations", got, want)
	equalLines(t, "violation cost",
		rowsText(t, s, `SELECT sum(cost) FROM payment_method_violations WHERE problem IN ('before start', 'on or after end')`),
		rowsText(t, s, `SELECT sum(cost) FROM usage WHERE payment_method_name = 'Legacy EU agreement' AND date >= '2026-09-10'`))
}

func TestMonthOverMonthViews(t *testing.T) {
	s, _ := exportFixture(t)
	// September against August, per project and meter, from the table.
	want := rowsText(t, s, `WITH m AS (
    SELECT coalesce(project, '') AS project, meter_name, currency, date_trunc('month', date) AS month, sum(cost) AS cost
    FROM usage GROUP BY ALL
)
SELECT s.project, s.meter_name, s.currency, coalesce(a.cost, 0), s.cost
FROM m s LEFT JOIN m a ON a.project = s.project AND a.meter_name = s.meter_name AND a.currency = s.currency AND a.month = '2026-08-01'
WHERE s.month = '2026-09-01'
ORDER BY ALL`)
	got := rowsText(t, s, `SELECT coalesce(project, ''), meter_name, currency, previous_cost, cost FROM cost_month_over_month
WHERE month = '2026-09-01' AND NOT (cost = 0 AND previous_cost <> 0) ORDER BY ALL`)
	equalLines(t, "September against August", got, want)
	if n := count(t, s, `SELECT count(*) FROM cost_month_over_month WHERE change <> cost - previous_cost`); n != 0 {
		t.Errorf("%d rows where change is not cost − previous_cost", n)
	}
	// Sports-live moved from a USD method to an EUR one in mid-September:
	// its USD live minutes show October at 0, its EUR ones start from 0.
	equalLines(t, "a pair that stopped",
		rowsText(t, s, `SELECT cost, previous_cost > 0, change = -previous_cost FROM cost_month_over_month
WHERE project = 'sports-live' AND meter_name = 'live_channel_minutes' AND currency = 'USD' AND month = '2026-10-01'`),
		[]string{"0.000000000000|true|true"})
	equalLines(t, "a pair that started",
		rowsText(t, s, `SELECT previous_cost, change_pct IS NULL FROM cost_month_over_month
WHERE project = 'sports-live' AND meter_name = 'live_channel_minutes' AND currency = 'EUR' AND month = '2026-09-01'`),
		[]string{"0.000000000000|true"})

	// top_movers ranks September's changes by size, per currency.
	for _, cur := range []string{"USD", "EUR"} {
		got := rowsText(t, s, `SELECT rank, month, abs(change) FROM top_movers WHERE currency = ? ORDER BY rank`, cur)
		if len(got) == 0 {
			t.Fatalf("no %s movers", cur)
		}
		prev := math.Inf(1)
		for i, r := range got {
			f := strings.Split(r, "|")
			if f[0] != strconv.Itoa(i+1) || f[1] != "2026-09-01" {
				t.Errorf("%s mover %d: %s", cur, i+1, r)
			}
			v, _ := strconv.ParseFloat(f[2], 64)
			if v > prev {
				t.Errorf("%s movers not ordered by the size of the change: %v", cur, got)
			}
			prev = v
		}
		biggest := rowsText(t, s, `SELECT max(abs(change)) FROM cost_month_over_month WHERE currency = ? AND month = '2026-09-01'`, cur)
		if !strings.HasSuffix(got[0], "|"+biggest[0]) {
			t.Errorf("%s: rank 1 is %s, the biggest change is %s", cur, got[0], biggest[0])
		}
	}
}

// Every named query runs on an empty store and on the fixture, and the
// new ones find something in the fixture.
func TestNamedQueriesRun(t *testing.T) {
	qs, err := NamedQueries()
	if err != nil {
		t.Fatal(err)
	}
	views, err := Views()
	if err != nil {
		t.Fatal(err)
	}
	empty := openTemp(t)
	s, _ := exportFixture(t)
	for _, q := range append(qs, views...) {
		if q.Description == "" {
			t.Errorf("%s has no header comment", q.Name)
		}
	}
	for _, q := range qs {
		if _, err := empty.Query(context.Background(), q.SQL); err != nil {
			t.Errorf("%s on an empty store: %v", q.Name, err)
		}
		res, err := s.Query(context.Background(), q.SQL)
		if err != nil {
			t.Errorf("%s: %v", q.Name, err)
			continue
		}
		switch q.Name {
		case "rate_card_variances", "validity_violations", "entitlement_coverage_by_month", "month_over_month", "top_movers_last_month":
			if len(res.Rows) == 0 {
				t.Errorf("%s found nothing in the fixture", q.Name)
			}
		}
	}
	for _, v := range views {
		if _, err := empty.Query(context.Background(), "SELECT * FROM "+v.Name); err != nil {
			t.Errorf("view %s on an empty store: %v", v.Name, err)
		}
	}
}
