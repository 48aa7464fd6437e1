-- in_report_month: whether a usage row falls in the report period
-- [period_start, period_end) on basis: by the day it was used (date) for
-- basis usage and estimated, by the day it was charged (date_processed)
-- for basis reported. The one place this rule lives: month_usage, flags
-- and the Summary's months and movers call it, each with its own period.
--
-- The bounds are cast to TIMESTAMP, the columns' type, so that DuckDB can
-- skip row groups outside the period: the parameters come as TIMESTAMP
-- WITH TIME ZONE, and compared with them as they are, the column would be
-- cast, which no zone map answers (every month read). The session's time
-- zone is UTC, so the cast moves no bound.
CREATE OR REPLACE MACRO in_report_month(basis, used, charged, period_start, period_end) AS
    (basis <> 'reported' AND used >= CAST(period_start AS TIMESTAMP) AND used < CAST(period_end AS TIMESTAMP))
    OR (basis = 'reported' AND charged >= CAST(period_start AS TIMESTAMP) AND charged < CAST(period_end AS TIMESTAMP));
