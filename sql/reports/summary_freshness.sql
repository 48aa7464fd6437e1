-- summary_freshness: how fresh the report month's data is. The last loaded
-- window (granularity and basis of the report) overlapping the month and
-- when it was fetched, the oldest fetch among those windows, how far the
-- loaded windows reach, and the last run Tally recorded. Always one row;
-- columns are NULL when nothing was loaded or run yet.
--
-- Parameters: $basis, $granularity, $month_start, $month_end (exclusive).
WITH w AS (
    SELECT *
    FROM fetch_windows
    WHERE ($org IS NULL OR organization = $org)
      AND granularity = $granularity
      AND basis = $basis
      AND start < CAST($month_end AS DATE)
      AND "end" > CAST($month_start AS DATE)
),
last_window AS (
    SELECT start, "end", scope, rows, fetched_at
    FROM w
    ORDER BY fetched_at DESC, start DESC, "end" DESC, scope
    LIMIT 1
),
coverage AS (
    SELECT min(fetched_at) AS oldest_fetched_at,
           min(start) AS first_start,
           max("end") AS last_end,
           count(*) AS windows
    FROM w
),
last_run AS (
    SELECT CAST(id AS VARCHAR) AS id, command, status, started, finished, error
    FROM runs
    ORDER BY started DESC, CAST(id AS VARCHAR) DESC
    LIMIT 1
)
SELECT lw.start AS window_start,
       lw."end" AS window_end,
       lw.scope AS window_scope,
       lw.rows AS window_rows,
       lw.fetched_at AS window_fetched_at,
       c.oldest_fetched_at,
       c.first_start,
       c.last_end,
       c.windows,
       lr.id AS run_id,
       lr.command AS run_command,
       lr.status AS run_status,
       lr.started AS run_started,
       lr.finished AS run_finished,
       lr.error AS run_error
FROM coverage c
LEFT JOIN last_window lw ON true
LEFT JOIN last_run lr ON true;
