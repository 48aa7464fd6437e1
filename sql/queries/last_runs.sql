-- last_runs: the 20 latest runs of a Tally command that writes, newest
-- first.
--
-- `tally status` reads this query by position: keep its columns and their
-- order.
SELECT id,
       command,
       job,
       started,
       finished,
       status,
       error,
       rows,
       windows,
       warnings,
       as_of -- the day a replay (--as-of) counted as today; NULL for a run as of its own day
FROM runs
ORDER BY started DESC, id DESC
LIMIT 20;
