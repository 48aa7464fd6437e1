-- anomaly_baselines: each day's cost of a project's meter, per currency,
-- on basis usage, beside its baseline: the median day of the 28 before it
-- and how many of them had usage. The anomalies view judges each day
-- against it. Rows are usage_day_cost's days (hour or day granularity).
-- Every load keeps these rows in daily_baselines (the days it rewrote and
-- the 28 after them), which the database reads in place of the sliding
-- median over every day kept. A filter on day cannot reach the rows
-- through the 28-day window: read the days asked for and the 28 before.
CREATE OR REPLACE VIEW anomaly_baselines AS
WITH daily AS (
    SELECT organization, day, coalesce(project, '') AS project, meter_name, currency, sum(cost) AS cost
    FROM usage_day_cost
    GROUP BY ALL
)
SELECT organization, -- the organization (organizations.name)
       day, -- the UTC day
       project, -- '' for usage without a project
       meter_name,
       currency,
       cost, -- what the meter cost that day, summed over payment methods and families
       median(cost) OVER w AS baseline, -- the median day of the 28 before; NULL when none of them had usage
       count(*) OVER w AS baseline_days -- days with usage among the 28
FROM daily
WINDOW w AS (PARTITION BY organization, project, meter_name, currency ORDER BY day
             RANGE BETWEEN INTERVAL 28 DAYS PRECEDING AND INTERVAL 1 DAY PRECEDING);
