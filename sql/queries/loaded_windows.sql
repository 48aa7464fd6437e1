-- loaded_windows: every window in the ledger (start inclusive, end
-- exclusive), with what fetching it cost and the run that loaded it.
SELECT granularity,
       basis,
       scope,
       start,
       "end",
       rows,
       requests,
       retries,
       bytes,
       duration_ms,
       fetched_at,
       run_id
FROM fetch_windows
ORDER BY CASE granularity WHEN 'hour' THEN 1 WHEN 'day' THEN 2 WHEN 'week' THEN 3 WHEN 'month' THEN 4 ELSE 5 END,
         basis, scope, start, "end";
