-- month_coverage: the granularities whose loaded windows (fetch_windows, of
-- the report's basis, any scope) cover every day of the report month up to
-- $cover_end (the month's end, or tomorrow for the month to date). Not a
-- sheet: reports.MonthGranularity reads it to pick, for a report asked at
-- week or year granularity, the finest loaded granularity that fits a month.
--
-- Parameters: $basis, $month_start, $cover_end (exclusive).
SELECT granularity
FROM (
    SELECT DISTINCT w.granularity, d.day
    FROM fetch_windows w,
         LATERAL (SELECT unnest(generate_series(
                      greatest(CAST(w.start AS TIMESTAMP), CAST($month_start AS TIMESTAMP)),
                      least(CAST(w."end" AS TIMESTAMP), CAST($cover_end AS TIMESTAMP)) - INTERVAL 1 DAY,
                      INTERVAL 1 DAY)) AS day) d
    WHERE w.basis = $basis
      AND ($org IS NULL OR w.organization = $org)
      AND w.start < CAST($cover_end AS TIMESTAMP)
      AND w."end" > CAST($month_start AS TIMESTAMP)
) c
GROUP BY granularity
HAVING count(*) = datediff('day', CAST($month_start AS TIMESTAMP), CAST($cover_end AS TIMESTAMP))
