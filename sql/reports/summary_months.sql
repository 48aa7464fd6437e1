-- summary_months: the usage value per currency of each of the 13 months
-- that end with the report month (the same month a year ago is the
-- first), on the report's basis and granularity and under the rule of
-- what a month holds (in_report_month), for the Summary's month at a glance
-- and its trend chart. With each month, how it was loaded: the fetch
-- windows of that basis and granularity that overlap it and how far they
-- reach. A month with neither rows nor a window was never loaded: it comes
-- back once, with no currency, so the Summary says "not loaded" rather
-- than show 0. Money is summed as DECIMAL, returned as text, never across
-- currencies.
--
-- Parameters: $basis, $granularity, $month_start, $org.
-- The rows are matched on date or date_processed themselves, so DuckDB
-- skips the row groups of other months.
WITH months AS (
    SELECT CAST(m AS DATE) AS month
    FROM generate_series(CAST($month_start AS TIMESTAMP) - INTERVAL 12 MONTH,
                         CAST($month_start AS TIMESTAMP), INTERVAL 1 MONTH) t(m)
),
cost AS (
    SELECT CAST(date_trunc('month', period_at) AS DATE) AS month,
           currency,
           count(*) AS rows,
           sum(cost) AS cost
    FROM usage_rows
    WHERE ($org IS NULL OR organization = $org)
      AND basis = $basis
      AND granularity = $granularity
      AND in_report_month($basis, date, date_processed,
                          CAST($month_start AS TIMESTAMP) - INTERVAL 12 MONTH, CAST($month_start AS TIMESTAMP) + INTERVAL 1 MONTH)
    GROUP BY ALL
),
windows AS (
    SELECT m.month,
           count(w.start) AS windows,
           min(w.start) AS first_start,
           max(w."end") AS last_end
    FROM months m
    LEFT JOIN fetch_windows w
      ON ($org IS NULL OR w.organization = $org)
     AND w.basis = $basis
     AND w.granularity = $granularity
     AND w.start < m.month + INTERVAL 1 MONTH
     AND w."end" > m.month
    GROUP BY m.month
)
SELECT m.month,
       w.windows,
       w.first_start,
       w.last_end,
       c.currency,
       c.rows,
       CAST(c.cost AS VARCHAR) AS cost
FROM months m
JOIN windows w ON w.month = m.month
LEFT JOIN cost c ON c.month = m.month
ORDER BY m.month, c.currency;
