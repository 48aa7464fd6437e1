-- daily: what the report month's usage is worth per day and currency, to
-- show the trend. The day is the bucket's day on the report basis (sample
-- day for basis usage, charge day for basis reported); hour buckets add up
-- into their day, week and month buckets show on their first day.
--
-- Parameters: $basis, $granularity, $month_start, $month_end (exclusive).
WITH m AS (
    SELECT CAST(CASE WHEN $basis = 'reported' THEN date_processed ELSE date END AS DATE) AS day,
           currency,
           cost
    FROM usage
    WHERE basis = $basis
      AND granularity = $granularity
      AND (($basis = 'usage' AND date >= $month_start AND date < $month_end)
        OR ($basis = 'reported' AND date_processed >= $month_start AND date_processed < $month_end))
)
SELECT day,
       currency,
       count(*) AS rows,
       CAST(sum(cost) AS VARCHAR) AS cost
FROM m
GROUP BY day, currency
ORDER BY day, currency;
