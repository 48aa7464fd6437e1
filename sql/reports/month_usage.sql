-- month_usage: the report month's usage rows (usage_rows, with period_at
-- and paid_as) of the report's basis and granularity: used in the month
-- for basis usage, charged in it for basis reported. Not a sheet: every
-- sheet query reads it (reports inlines it, see tallysql.With).
--
-- Parameters: $basis, $granularity, $month_start, $month_end (exclusive).
-- The month is matched on date or date_processed themselves, not on
-- period_at, and against bounds cast to TIMESTAMP, the columns' type, so
-- that DuckDB can skip row groups outside the month: the parameters come
-- as TIMESTAMP WITH TIME ZONE, and compared with them as they are, the
-- column would be cast, which no zone map answers (every month read).
-- The session's time zone is UTC, so the cast moves no bound.
SELECT *
FROM usage_rows
WHERE ($org IS NULL OR organization = $org)
  AND basis = $basis
  AND granularity = $granularity
  AND (($basis <> 'reported' AND date >= CAST($month_start AS TIMESTAMP) AND date < CAST($month_end AS TIMESTAMP))
    OR ($basis = 'reported' AND date_processed >= CAST($month_start AS TIMESTAMP) AND date_processed < CAST($month_end AS TIMESTAMP)))
