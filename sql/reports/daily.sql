-- daily: what the report month's usage is worth per day and currency, to
-- show the trend. The day is the bucket's day on the report basis (sample
-- day for basis usage, charge day for basis reported); hour buckets add up
-- into their day, week and month buckets show on their first day.
--
-- Parameters: $basis, $granularity, $month_start, $month_end (exclusive).
SELECT CAST(period_at AS DATE) AS day,
       currency,
       count(*) AS rows,
       CAST(sum(cost) AS VARCHAR) AS cost
FROM month_usage
GROUP BY CAST(period_at AS DATE), currency
ORDER BY day, currency;
