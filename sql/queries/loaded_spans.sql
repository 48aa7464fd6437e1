-- loaded_spans: per granularity, basis and scope, the span the ledger
-- covers (first start to last end, holes included: see gaps), how many
-- windows and rows, and when it was last fetched.
--
-- `tally status` reads this query by position: keep its columns and their
-- order.
SELECT organization,
       granularity,
       basis,
       scope,
       min(start) AS start,
       max("end") AS "end",
       count(*) AS windows,
       sum(rows)::BIGINT AS rows,
       max(fetched_at) AS last_fetched_at
FROM fetch_windows
GROUP BY organization, granularity, basis, scope
ORDER BY organization, CASE granularity WHEN 'hour' THEN 1 WHEN 'day' THEN 2 WHEN 'week' THEN 3 WHEN 'month' THEN 4 ELSE 5 END,
         basis, scope;
