-- budget: one budget's month, day by day, from forecast_days (basis
-- usage, whatever the workbook's basis): what each day cost up to as_of,
-- and what each later day of the current month is forecast to cost, with
-- the month's actual cost so far from forecasts (the latest, partial day
-- included).
--
-- Parameters: $month_start, $scope_kind, $scope, $currency.
SELECT f.day,
       f.kind,
       CAST(f.cost AS VARCHAR) AS cost,
       f.as_of,
       CAST(t.actual_cost AS VARCHAR) AS actual_cost
FROM forecast_days f
JOIN forecasts t
  ON t.month = f.month AND t.scope_kind = f.scope_kind AND t.scope = f.scope AND t.currency = f.currency
WHERE f.month = $month_start AND f.scope_kind = $scope_kind AND f.scope = $scope AND f.currency = $currency
ORDER BY f.day;
