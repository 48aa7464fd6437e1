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
--
-- No CTE is read twice: DuckDB keeps NOT MATERIALIZED only in the session
-- that created the view (a database reopened, or the analysts' published
-- copy, reads it back materialized, and a condition on month no longer
-- reaches the scan), so each part reads usage_finest_days itself.
CREATE OR REPLACE VIEW cost_month_over_month AS
WITH last AS (
    SELECT basis, max(month) AS month FROM usage_finest_days GROUP BY basis
),
-- Each pair's day counts toward its month's cost and toward the next
-- month's previous cost (up to the basis's latest month): one sum per
-- month rather than a join of the months with themselves, so a condition
-- on month reaches the stored month and next_month of both.
parts AS (
    SELECT organization, basis, month, coalesce(project, '') AS project, meter_name, currency, cost, NULL AS previous_cost
    FROM usage_finest_days
    UNION ALL
    SELECT d.organization, d.basis, d.next_month, coalesce(d.project, ''), d.meter_name, d.currency, NULL, d.cost
    FROM usage_finest_days d
    JOIN last l ON l.basis = d.basis
    WHERE d.month < l.month
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
