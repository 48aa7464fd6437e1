-- forecasts: the month-end cost per month, budget scope and currency: the
-- month to date plus the remaining days at the rate of the trailing 28
-- days, weekday by weekday (see forecast_days). For a month that is over,
-- the forecast is what it cost. Budgets compare actual_cost and
-- forecast_cost with their amount.
CREATE OR REPLACE VIEW forecasts AS
WITH spent AS (
    -- Each month's cost so far: one pass over the days, joined below,
    -- rather than a sum per scope and month.
    SELECT CAST(date_trunc('month', day) AS DATE) AS month, scope_kind, scope, currency, sum(cost) AS cost
    FROM scope_daily_cost
    GROUP BY ALL
)
SELECT f.month, -- first day of the month
       f.scope_kind, -- all, project, payment_method, family or cost_centre
       f.scope, -- the project, payment method id, family or cost centre; '' for all
       f.currency,
       any_value(f.as_of) AS as_of, -- the last complete day of the data
       coalesce(any_value(s.cost), 0) AS actual_cost, -- cost so far, the latest partial day included
       sum(f.cost) FILTER (WHERE f.kind = 'actual') AS cost_to_as_of, -- cost of the complete days
       count(*) FILTER (WHERE f.kind = 'forecast') AS forecast_days, -- days still forecast
       CAST(sum(f.cost) AS DECIMAL(38, 6)) AS forecast_cost -- the expected month-end cost
FROM forecast_days f
LEFT JOIN spent s
       ON s.month = f.month AND s.scope_kind = f.scope_kind AND s.scope = f.scope AND s.currency = f.currency
GROUP BY f.month, f.scope_kind, f.scope, f.currency;
