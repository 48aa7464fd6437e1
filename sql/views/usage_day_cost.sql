-- usage_day_cost: what each project, payment method, meter family and
-- meter cost per UTC day and currency, on basis usage (when the usage
-- happened): the rows usage_finest counts, at hour or day granularity (a
-- week, month or year bucket cannot be split into days), summed. Budgets,
-- forecasts and anomalies read it (through scope_daily_cost and
-- anomalies).
--
-- In the database this view reads daily_usage_cost, the same rows kept
-- by every load, so a query over every day reads days, not usage rows.
-- The workbook and the alert checks use this definition instead, reading
-- the usage table for the days they need (a condition on usage.date,
-- which DuckDB takes to the table's scan). The cost is the usage value,
-- every row as the interface reports it, whatever pays it.
CREATE OR REPLACE VIEW usage_day_cost AS
SELECT u.organization, -- the organization (organizations.name)
       CAST(u.date AS DATE) AS day, -- the UTC day
       u.project, -- the project name; NULL for usage without one
       u.payment_method, -- the payment method id; NULL when none
       u.family, -- the meter family; NULL when none
       u.meter_name,
       u.currency,
       sum(u.cost) AS cost -- exact, never summed across currencies
FROM usage u
SEMI JOIN usage_coverage c
    ON c.organization = u.organization AND c.basis = u.basis AND c.granularity = u.granularity AND c.day = CAST(u.date AS DATE)
WHERE u.basis = 'usage' AND u.granularity IN ('hour', 'day')
GROUP BY ALL;
