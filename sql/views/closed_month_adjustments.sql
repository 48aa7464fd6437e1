-- closed_month_adjustments: per closed month, project, meter, payment
-- method and currency: the usage value as it stood when the month was
-- closed, today's value in the store, and the difference (today − closed).
-- A month counts as closed as closed_months says, per organization; a
-- reopened month has no rows here.
--
-- Late charges for a closed month are still loaded (the store stays exact
-- to the interface), so today's value can move; the closed month's final
-- workbook and its FOCUS rows do not: the difference is an adjustment,
-- shown in the workbooks written while it is not zero and, in focus, as
-- ChargeClass 'Correction' rows in found_month.
--
-- found_month is the billing period a difference belongs to: the month in
-- which Tally last loaded the group's rows (the latest fetched_at; the
-- close's own month when the rows are gone), and never earlier than the
-- month after the closed month; it matters only where there is a difference.
-- Money is exact DECIMAL and is never added across currencies.
CREATE OR REPLACE VIEW closed_month_adjustments AS
WITH closed AS (
    SELECT id, organization, month, basis, granularity, acted_at AS closed_at
    FROM closed_months
),
today AS (
    SELECT c.id AS close_id,
           u.organization,
           u.project,
           u.meter_name,
           u.payment_method,
           u.currency,
           count(*) AS rows,
           sum(u.cost) AS cost,
           sum(CASE WHEN is_billed(u.paid_as) THEN u.cost ELSE 0 END) AS billed,
           sum(CASE WHEN is_effective(u.paid_as) THEN u.cost ELSE 0 END) AS effective,
           max(u.fetched_at) AS last_fetched
    FROM closed c
    JOIN usage_rows u
      ON u.organization = c.organization AND u.basis = c.basis AND u.granularity = c.granularity
     AND u.period_at >= c.month AND u.period_at < c.month + INTERVAL 1 MONTH
    GROUP BY ALL
),
frozen AS (
    SELECT f.*
    FROM month_close_figures f
    JOIN closed c ON c.id = f.close_id AND c.organization = f.organization
),
paired AS (
    SELECT coalesce(f.close_id, t.close_id) AS close_id,
           coalesce(f.organization, t.organization) AS organization,
           coalesce(f.project, t.project) AS project,
           coalesce(f.meter_name, t.meter_name) AS meter_name,
           coalesce(f.payment_method, t.payment_method) AS payment_method,
           coalesce(f.currency, t.currency) AS currency,
           coalesce(f.rows, 0) AS closed_rows,
           coalesce(t.rows, 0) AS today_rows,
           coalesce(f.cost, 0) AS closed_cost,
           coalesce(t.cost, 0) AS today_cost,
           coalesce(f.billed, 0) AS closed_billed,
           coalesce(t.billed, 0) AS today_billed,
           coalesce(f.effective, 0) AS closed_effective,
           coalesce(t.effective, 0) AS today_effective,
           t.last_fetched
    FROM frozen f
    FULL OUTER JOIN today t
      ON t.close_id = f.close_id AND t.organization = f.organization AND t.meter_name = f.meter_name AND t.currency = f.currency
     AND t.project IS NOT DISTINCT FROM f.project
     AND t.payment_method IS NOT DISTINCT FROM f.payment_method
)
SELECT c.month AS month, -- the closed month, its first day
       c.basis AS basis, -- usage or reported, as the close
       c.granularity AS granularity, -- the usage rows closed
       c.closed_at AS closed_at, -- when the month was closed, UTC
       p.organization AS organization, -- the organization (organizations.name)
       p.project AS project, -- project name
       p.meter_name AS meter_name, -- the meter
       p.payment_method AS payment_method, -- payment method id
       p.currency AS currency, -- ISO 4217 code of every amount on the row
       p.closed_rows AS closed_rows, -- usage rows at close
       p.today_rows AS today_rows, -- usage rows in the store today
       CAST(p.closed_cost AS DECIMAL(38, 12)) AS closed_cost, -- usage value at close
       CAST(p.today_cost AS DECIMAL(38, 12)) AS today_cost, -- usage value today
       CAST(p.today_cost - p.closed_cost AS DECIMAL(38, 12)) AS difference, -- today − closed: the adjustment
       CAST(p.today_billed - p.closed_billed AS DECIMAL(38, 12)) AS billed_difference, -- the adjustment to what is invoiced (FOCUS BilledCost)
       CAST(p.today_effective - p.closed_effective AS DECIMAL(38, 12)) AS effective_difference, -- the adjustment to the amortized cost (FOCUS EffectiveCost)
       CAST(greatest(date_trunc('month', coalesce(p.last_fetched, c.closed_at)), c.month + INTERVAL 1 MONTH) AS DATE) AS found_month -- the billing period the adjustment belongs to (see the header)
FROM paired p
JOIN closed c ON c.id = p.close_id AND c.organization = p.organization;
