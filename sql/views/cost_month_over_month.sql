-- cost_month_over_month: how each project's cost of each meter changed from
-- one calendar month (UTC) to the next, per basis and currency: the month's
-- cost, the previous month's, the change and the change as a fraction of
-- the previous month. A pair that stopped being used shows its last month
-- again with cost 0; a new one has previous_cost 0 and no change_pct.
--
-- Rows are those of the finest granularity loaded for each basis, summed
-- from their daily totals (usage_finest_days), whose month and next month
-- are stored: WHERE month = … reads that month and the one before only.
-- The latest month may be partial: compare it only with care.
CREATE OR REPLACE VIEW cost_month_over_month AS
WITH monthly AS NOT MATERIALIZED (
    -- read three times, each under its own conditions (a month asked
    -- for reaches the table's scan), not one copy of every month shared
    SELECT organization,
           basis,
           month,
           next_month,
           coalesce(project, '') AS project,
           meter_name,
           currency,
           sum(cost) AS cost
    FROM usage_finest_days
    GROUP BY organization, basis, month, next_month, coalesce(project, ''), meter_name, currency
),
last AS (
    SELECT basis, max(month) AS month FROM monthly GROUP BY basis
),
-- Each pair's month counts as its own cost and as the next month's
-- previous cost (up to the basis's latest month): one sum per month
-- rather than a join of the months with themselves, so a condition on
-- month reaches the stored month and next_month of both.
parts AS (
    SELECT organization, basis, month, project, meter_name, currency, cost, NULL AS previous_cost
    FROM monthly
    UNION ALL
    SELECT m.organization, m.basis, m.next_month, m.project, m.meter_name, m.currency, NULL, m.cost
    FROM monthly m
    JOIN last l ON l.basis = m.basis
    WHERE m.month < l.month
),
pair AS (
    SELECT organization,
           basis,
           month,
           project,
           meter_name,
           currency,
           coalesce(sum(cost), 0) AS cost,
           sum(previous_cost) AS p
    FROM parts
    GROUP BY organization, basis, month, project, meter_name, currency
)
SELECT organization,
       basis,
       month,
       nullif(project, '') AS project,
       meter_name,
       currency,
       cost,
       coalesce(p, 0) AS previous_cost,
       cost - coalesce(p, 0) AS change,
       CASE WHEN coalesce(p, 0) <> 0
            THEN CAST(cost - p AS DOUBLE) / CAST(p AS DOUBLE)
       END AS change_pct
FROM pair;
