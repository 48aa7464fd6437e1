-- usage_day_cost: what each project, payment method, meter family and
-- meter cost per UTC day and currency, on basis usage (when the usage
-- happened): the rows usage_finest counts, at hour or day granularity (a
-- week, month or year bucket cannot be split into days), summed. Budgets,
-- forecasts and anomalies read it (through scope_daily_cost and
-- anomalies).
--
-- day is the usage row's date cut to the day, read straight from the
-- usage table, so a filter on day reaches the table's scan: WHERE day
-- >= … reads those days' rows, not the history. The cost is the usage
-- value, every row as the interface reports it, whatever pays it.
CREATE OR REPLACE VIEW usage_day_cost AS
SELECT CAST(u.date AS DATE) AS day, -- the UTC day
       u.project, -- the project name; NULL for usage without one
       u.payment_method, -- the payment method id; NULL when none
       u.family, -- the meter family; NULL when none
       u.meter_name,
       u.currency,
       sum(u.cost) AS cost -- exact, never summed across currencies
FROM usage u
SEMI JOIN usage_coverage c
    ON c.basis = u.basis AND c.granularity = u.granularity AND c.day = CAST(u.date AS DATE)
WHERE u.basis = 'usage' AND u.granularity IN ('hour', 'day')
GROUP BY ALL;
