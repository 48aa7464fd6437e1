-- detail_days: how many Detail rows fall on each day of their date, in
-- date order. The Detail sheets read the month a few days at a time
-- (detail.sql's $detail_from and $detail_to), so each read sorts only those
-- days' rows and the month is never sorted in memory at once.
--
-- Parameters: $basis, $granularity, $month_start, $month_end (exclusive).
SELECT CAST(date AS DATE) AS day,
       count(*) AS rows
FROM month_usage
GROUP BY 1
ORDER BY 1;
