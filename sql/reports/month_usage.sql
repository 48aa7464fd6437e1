-- month_usage: the report month's usage rows (usage_rows, with period_at
-- and paid_as) of the report's basis and granularity: used in the month
-- for basis usage, charged in it for basis reported. Not a sheet: every
-- sheet query reads it (reports inlines it, see tallysql.With).
--
-- Parameters: $basis, $granularity, $month_start, $month_end (exclusive).
-- The month is matched on date or date_processed themselves
-- (in_report_month), not on period_at, so that DuckDB can skip row groups
-- outside the month.
SELECT *
FROM usage_rows
WHERE ($org IS NULL OR organization = $org)
  AND basis = $basis
  AND granularity = $granularity
  AND in_report_month($basis, date, date_processed, $month_start, $month_end)
