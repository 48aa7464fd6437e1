-- anomalies: the days a project's meter cost jumped, per currency, on
-- basis usage: a day whose cost exceeds the median of the trailing 28 days
-- before it by more than mads scaled median absolute deviations (MAD ×
-- 1.4826, which matches a standard deviation for normal noise), by at
-- least min_amount and by at least min_percent of the median: a steady
-- meter's 2% wobble is many MADs but no news. The thresholds are the last
-- run's (alert_settings, from the config's anomalies section), or 4, 1 and
-- 50 before any run wrote them. A baseline needs 14 days with usage among the 28; a median and MAD
-- are robust: one earlier spike does not hide the next.
--
-- Rows are usage_day_cost's: usage_finest's at hour or day granularity (a
-- week or month bucket cannot be split into days). A filter on day cannot
-- reach the rows through the 28-day window; a monthly check reads the
-- month and its baseline only (see the workbook's and alerts' queries). Only jumps up are anomalies: a drop is
-- usually usage not charged yet.
CREATE OR REPLACE VIEW anomalies AS
WITH settings AS (
    SELECT coalesce((SELECT mads FROM alert_settings ORDER BY updated_at DESC LIMIT 1), 4) AS mads,
           coalesce((SELECT min_amount FROM alert_settings ORDER BY updated_at DESC LIMIT 1), 1) AS min_amount,
           coalesce((SELECT min_percent FROM alert_settings ORDER BY updated_at DESC LIMIT 1), 50) AS min_percent
),
-- Each day's cost and its baseline: anomaly_baselines, which the
-- database reads from the baselines every load keeps.
scored AS (
    SELECT * FROM anomaly_baselines
),
-- A MAD over a sliding window costs several times the median (3 s against
-- 0.8 s at two years of 1,360 meters), and only the days the amount and
-- percent thresholds keep need one: theirs is the same mad() over the same
-- 28 days, read by a join.
candidates AS (
    SELECT s.*, t.mads, t.min_amount, t.min_percent
    FROM scored s, settings t
    WHERE s.baseline_days >= 14
      AND s.cost - s.baseline >= t.min_amount
      AND s.cost - s.baseline >= s.baseline * t.min_percent / 100
),
spread AS (
    SELECT c.organization, c.day, c.project, c.meter_name, c.currency, mad(b.cost) AS mad
    FROM candidates c
    JOIN scored b ON b.organization = c.organization AND b.project = c.project AND b.meter_name = c.meter_name AND b.currency = c.currency
                AND b.day >= c.day - 28 AND b.day < c.day
    GROUP BY c.organization, c.day, c.project, c.meter_name, c.currency
)
SELECT s.organization, -- the organization (organizations.name)
       s.day, -- the UTC day
       s.project, -- '' for usage without a project
       s.meter_name,
       s.currency,
       s.cost, -- what the meter cost that day
       s.baseline, -- the median day of the 28 before
       m.mad, -- their median absolute deviation, unscaled
       s.baseline_days, -- days with usage among the 28
       s.cost - s.baseline AS excess, -- how much more than the median
       CASE WHEN m.mad > 0 THEN CAST((s.cost - s.baseline) / (m.mad * 1.4826) AS DOUBLE) END AS score, -- excess in scaled MADs; null when the baseline never varies
       s.mads AS threshold_mads, -- the thresholds applied
       s.min_amount AS threshold_amount,
       s.min_percent AS threshold_percent
FROM candidates s
JOIN spread m USING (organization, day, project, meter_name, currency)
WHERE s.cost - s.baseline > s.mads * 1.4826 * m.mad;
