-- budget: the report month's budget figures, day by day, for every budget
-- scope and currency at once, from forecast_days (basis usage, whatever
-- the workbook's basis): what each day cost up to as_of, and what each
-- later day of the current month is forecast to cost, with the month's
-- actual cost so far from forecasts (the latest, partial day included).
-- The workbook runs it once and picks each budget's rows; it reads the
-- month, its 28-day baseline and the data's latest days (the days
-- usage_day_cost is read for), not the history.
--
-- Parameters: $month_start.
SELECT f.scope_kind,
       f.scope,
       f.currency,
       f.day,
       f.kind,
       CAST(f.cost AS VARCHAR) AS cost,
       f.as_of,
       CAST(t.actual_cost AS VARCHAR) AS actual_cost,
       f.last_usage_day,
       f.last_fetched_day
FROM forecast_days f
JOIN forecasts t
  ON t.month = f.month AND t.scope_kind = f.scope_kind AND t.scope = f.scope AND t.currency = f.currency
WHERE f.month = $month_start
ORDER BY f.scope_kind, f.scope, f.currency, f.day;
