-- gaps: date ranges between loaded windows (start inclusive, end
-- exclusive) that no window of the same granularity, basis and scope
-- covers.
--
-- `tally status` reads this query by position: keep its columns and their
-- order.
WITH covered AS (
    SELECT organization,
           granularity,
           basis,
           scope,
           start,
           max("end") OVER (
               PARTITION BY organization, granularity, basis, scope
               ORDER BY start, "end"
               ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING
           ) AS covered_until
    FROM fetch_windows
)
SELECT organization,
       granularity,
       basis,
       scope,
       covered_until AS start,
       start AS "end",
       datediff('day', covered_until, start) AS days
FROM covered
WHERE covered_until < start
ORDER BY organization, CASE granularity WHEN 'hour' THEN 1 WHEN 'day' THEN 2 WHEN 'week' THEN 3 WHEN 'month' THEN 4 ELSE 5 END,
         basis, scope, start;
