-- cost_month_over_month: how each project's cost of each meter changed from
-- one calendar month (UTC) to the next, per basis and currency: the month's
-- cost, the previous month's, the change and the change as a fraction of
-- the previous month. A pair that stopped being used shows its last month
-- again with cost 0; a new one has previous_cost 0 and no change_pct.
--
-- Rows are those of the finest granularity loaded for each basis. The
-- latest month may be partial: compare it only with care.
CREATE OR REPLACE VIEW cost_month_over_month AS
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
                   AND p.meter_name = g.meter_name AND p.currency = g.currency;
