package store

import (
	"context"
	"database/sql"
	"strings"
	"testing"
	"time"
)

// anomaliesBefore is the anomalies view as it was defined before it read
// the MAD of only the days the other thresholds keep (issue 23): one
// sliding median and MAD over every day.
const anomaliesBefore = `CREATE VIEW anomalies_before AS
WITH settings AS (
    SELECT coalesce((SELECT mads FROM alert_settings ORDER BY updated_at DESC LIMIT 1), 4) AS mads,
           coalesce((SELECT min_amount FROM alert_settings ORDER BY updated_at DESC LIMIT 1), 1) AS min_amount,
           coalesce((SELECT min_percent FROM alert_settings ORDER BY updated_at DESC LIMIT 1), 50) AS min_percent
),
daily AS (
    SELECT day, coalesce(project, '') AS project, meter_name, currency, sum(cost) AS cost
    FROM usage_day_cost
    GROUP BY ALL
),
scored AS (
    SELECT d.*,
           median(d.cost) OVER w AS baseline,
           mad(d.cost) OVER w AS mad,
           count(*) OVER w AS baseline_days
    FROM daily d
    WINDOW w AS (PARTITION BY project, meter_name, currency ORDER BY day
                 RANGE BETWEEN INTERVAL 28 DAYS PRECEDING AND INTERVAL 1 DAY PRECEDING)
)
SELECT s.day, -- the UTC day
       s.project, -- '' for usage without a project
       s.meter_name,
       s.currency,
       s.cost, -- what the meter cost that day
       s.baseline, -- the median day of the 28 before
       s.mad, -- their median absolute deviation, unscaled
       s.baseline_days, -- days with usage among the 28
       s.cost - s.baseline AS excess, -- how much more than the median
       CASE WHEN s.mad > 0 THEN CAST((s.cost - s.baseline) / (s.mad * 1.4826) AS DOUBLE) END AS score, -- excess in scaled MADs; null when the baseline never varies
       t.mads AS threshold_mads, -- the thresholds applied
       t.min_amount AS threshold_amount,
       t.min_percent AS threshold_percent
FROM scored s, settings t
WHERE s.baseline_days >= 14
  AND s.cost - s.baseline >= t.min_amount
  AND s.cost - s.baseline >= s.baseline * t.min_percent / 100
  AND s.cost - s.baseline > t.mads * 1.4826 * s.mad
`

// TestAnomaliesAsBefore: the anomalies view gives exactly the rows, to the
// last decimal, of its former definition, on noisy days of several
// projects, meters and currencies (with gaps, repeated values whose MAD
// is 0, even and odd baselines, no project, a NULL cost) and thresholds
// low enough that most days are candidates, and again with the defaults.
func TestAnomaliesAsBefore(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	// hash() spreads the costs; every seventh day of a pair is missing, a
	// fifth of the days repeat one value, some days spike.
	if _, err := s.db.ExecContext(ctx, `INSERT INTO daily_usage_cost (day, project, payment_method, family, meter_name, currency, cost)
SELECT d.day, nullif(p.project, ''), 'pm-1', 'media', m.meter, c.currency,
       CASE WHEN hash(d.day, p.project, m.meter) % 97 = 0 THEN NULL
            WHEN hash(d.day, p.project, m.meter) % 5 = 0 THEN CAST(3.5 AS DECIMAL(38, 12))
            WHEN hash(d.day, p.project, m.meter) % 23 = 0 THEN CAST(hash(d.day) % 100000 AS DECIMAL(38, 12)) / 1000
            ELSE CAST(hash(d.day, m.meter, c.currency) % 9000 AS DECIMAL(38, 12)) / 1000
       END
FROM (SELECT CAST(range AS DATE) AS day FROM range(DATE '2026-01-01', DATE '2026-06-01', INTERVAL 1 DAY)) d,
     (VALUES ('alpha'), ('beta'), ('')) p(project),
     (VALUES ('encoding'), ('storage')) m(meter),
     (VALUES ('USD'), ('EUR')) c(currency)
WHERE hash(d.day, p.project, m.meter, c.currency) % 7 <> 0`); err != nil {
		t.Fatal(err)
	}
	// Two rows of one day and pair, as two payment methods give: the view sums them.
	if _, err := s.db.ExecContext(ctx, `INSERT INTO daily_usage_cost (day, project, payment_method, family, meter_name, currency, cost) VALUES (DATE '2026-03-03', 'alpha', 'pm-2', 'media', 'encoding', 'USD', 12.25)`); err != nil {
		t.Fatal(err)
	}
	// Days written by other means than a load: their baselines are kept
	// as a load's would be.
	if err := s.inTx(ctx, func(conn *sql.Conn) error { return refreshBaselines(ctx, conn, "", time.Time{}, farFuture) }); err != nil {
		t.Fatal(err)
	}
	if _, err := s.db.ExecContext(ctx, anomaliesBefore); err != nil {
		t.Fatal(err)
	}
	for _, th := range [][3]string{{"0.5", "0", "0"}, {"4", "1", "50"}, {"1", "0.01", "-90"}} {
		// The thresholds as alerts.SaveSettings writes them (alerts
		// imports store: this test cannot call it).
		if _, err := s.db.ExecContext(ctx, `DELETE FROM alert_settings`); err != nil {
			t.Fatal(err)
		}
		if _, err := s.db.ExecContext(ctx, `INSERT INTO alert_settings VALUES (CAST(? AS DECIMAL(9, 3)), CAST(? AS DECIMAL(18, 6)), CAST(? AS DECIMAL(9, 3)), ?)`,
			th[0], th[1], th[2], time.Now().UTC()); err != nil {
			t.Fatal(err)
		}
		want, got := viewLines(t, s, "anomalies_before"), viewLines(t, s, "anomalies")
		if len(want) == 0 {
			t.Fatalf("thresholds %v: no anomalies: the test compares nothing", th)
		}
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Fatalf("thresholds %v: anomalies (%d rows) differ from the former definition (%d rows)\ngot  %.2000s\nwant %.2000s", th, len(got), len(want), strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		t.Logf("thresholds %v: %d anomalies, the same", th, len(got))
	}
}
