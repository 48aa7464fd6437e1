-- job_runs: each scheduled job's latest run (whatever its status) and when
-- it last succeeded, one row a job, by job name. Runs of `tally fetch` and
-- `tally run` without --job have no job and are left out.
--
-- `tally status` and `tally schedule` read this query by position: keep its
-- columns and their order.
WITH latest AS (
    SELECT *,
           row_number() OVER (PARTITION BY job ORDER BY started DESC, id DESC) AS n
    FROM runs
    WHERE job IS NOT NULL
)
SELECT l.job,
       l.id,
       l.command,
       l.started,
       l.finished,
       l.status,
       l.error,
       l.rows,
       l.windows,
       (SELECT max(s.finished) FROM runs s WHERE s.job = l.job AND s.status = 'ok') AS last_success,
       l.as_of -- the day a replay (--as-of) counted as today; NULL for a run as of its own day
FROM latest l
WHERE l.n = 1
ORDER BY l.job;
