-- forecasts: the month-end cost per month, budget scope and currency: the
-- month to date plus the remaining days at the rate of the trailing 28
-- days, weekday by weekday (see forecast_days). For a month that is over,
-- the forecast is what it cost. Budgets compare actual_cost and
-- forecast_cost with their amount.
--
-- The month's cost so far is summed from forecast_days' recorded cost,
-- every day of every month it lists: reading scope_daily_cost again
-- summed the days twice (half the view's time at 100 million rows).
CREATE OR REPLACE VIEW forecasts AS
SELECT f.month, -- first day of the month
       f.scope_kind, -- all, project, payment_method, family or cost_centre
       f.scope, -- the project, payment method id, family or cost centre; '' for all
       f.currency,
       any_value(f.as_of) AS as_of, -- the last complete day of the data
       any_value(f.last_usage_day) AS last_usage_day, -- the latest day holding any usage; complete when on or before as_of
       any_value(f.last_fetched_day) AS last_fetched_day, -- the latest day fetched; days after last_usage_day up to it held no usage
       coalesce(sum(f.recorded_cost), 0) AS actual_cost, -- cost so far, the latest partial day included
       sum(f.cost) FILTER (WHERE f.kind = 'actual') AS cost_to_as_of, -- cost of the complete days
       count(*) FILTER (WHERE f.kind = 'forecast') AS forecast_days, -- days still forecast
       CAST(sum(f.cost) AS DECIMAL(38, 6)) AS forecast_cost -- the expected month-end cost
FROM forecast_days f
GROUP BY f.month, f.scope_kind, f.scope, f.currency;
