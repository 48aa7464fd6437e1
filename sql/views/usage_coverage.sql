-- usage_coverage: for each organization, basis and day (UTC), which
-- granularity's rows count for that day (each organization has its own
-- ledger, so its own choice), read from the fetch_windows ledger, so that a charge
-- loaded at two granularities counts once and a small finer fetch never
-- hides the other periods. One row per organization, basis, granularity and
-- day chosen; usage_finest keeps a usage row when (organization, basis,
-- granularity, day of period_at) is here. The table is small (days x bases), so the views on
-- it are a hash join, not a subquery per usage row.
--
-- A granularity covers a day when a loaded window of that granularity and
-- basis (any scope) spans the whole day; windows are whole dates, so every
-- day in [start, end) is covered. The choice:
--
--   a month whose every day is covered by hour or day: each day takes the
--     finest of hour and day covering it;
--   otherwise, a month covered by a month window: the month's rows (every
--     day of the month maps to 'month'), and no hour or day rows of it;
--   otherwise, each day covered by hour or day takes the finest of them;
--   week and year rows count only for buckets (Monday weeks, calendar
--     years) none of whose days is taken by a finer granularity above. A
--     bucket cannot be split, so one that holds such a day is left out
--     whole rather than counted twice: its other days are then missing
--     from the views until they are fetched at hour, day or month.
--
-- Day is of period_at: date for basis usage, date_processed for basis
-- reported (the date the window filtered on).
CREATE OR REPLACE VIEW usage_coverage AS
WITH cov AS (
    SELECT DISTINCT w.organization, w.basis, w.granularity, CAST(d.day AS DATE) AS day
    FROM fetch_windows w,
         LATERAL (SELECT unnest(generate_series(CAST(w.start AS TIMESTAMP), CAST(w."end" AS TIMESTAMP) - INTERVAL 1 DAY, INTERVAL 1 DAY)) AS day) d
    WHERE w."end" > w.start
),
fine AS (
    SELECT organization,
           basis,
           day,
           CAST(date_trunc('month', day) AS DATE) AS month,
           arg_min(granularity, CASE granularity WHEN 'hour' THEN 1 ELSE 2 END) AS granularity
    FROM cov
    WHERE granularity IN ('hour', 'day')
    GROUP BY organization, basis, day
),
fine_months AS (
    SELECT organization, basis, month
    FROM fine
    GROUP BY organization, basis, month
    HAVING count(*) = datediff('day', month, month + INTERVAL 1 MONTH)
),
month_days AS (
    SELECT organization, basis, day, CAST(date_trunc('month', day) AS DATE) AS month
    FROM cov
    WHERE granularity = 'month'
),
month_months AS (
    SELECT m.organization, m.basis, m.month
    FROM month_days m
    ANTI JOIN fine_months f ON f.organization = m.organization AND f.basis = m.basis AND f.month = m.month
    GROUP BY m.organization, m.basis, m.month
    HAVING count(*) = datediff('day', m.month, m.month + INTERVAL 1 MONTH)
),
chosen AS (
    SELECT f.organization, f.basis, f.granularity, f.day
    FROM fine f
    ANTI JOIN month_months m ON m.organization = f.organization AND m.basis = f.basis AND m.month = f.month
    UNION ALL
    SELECT d.organization, d.basis, 'month', d.day
    FROM month_days d
    SEMI JOIN month_months m ON m.organization = d.organization AND m.basis = d.basis AND m.month = d.month
),
coarse AS (
    SELECT organization, basis, granularity, day,
           CASE granularity
               WHEN 'week' THEN CAST(date_trunc('week', day) AS DATE)
               ELSE CAST(date_trunc('year', day) AS DATE)
           END AS bucket
    FROM cov
    WHERE granularity IN ('week', 'year')
),
coarse_taken AS (
    SELECT DISTINCT c.organization, c.basis, c.granularity, c.bucket
    FROM coarse c
    SEMI JOIN chosen h ON h.organization = c.organization AND h.basis = c.basis AND h.day = c.day
),
weeks AS (
    SELECT c.organization, c.basis, c.granularity, c.day, c.bucket
    FROM coarse c
    ANTI JOIN coarse_taken t ON t.organization = c.organization AND t.basis = c.basis AND t.granularity = c.granularity AND t.bucket = c.bucket
    WHERE c.granularity = 'week'
),
weeks_taken AS (
    SELECT DISTINCT c.organization, c.basis, c.bucket
    FROM coarse c
    SEMI JOIN weeks w ON w.organization = c.organization AND w.basis = c.basis AND w.day = c.day
    WHERE c.granularity = 'year'
)
SELECT organization, basis, granularity, day FROM chosen
UNION ALL
SELECT organization, basis, granularity, day FROM weeks
UNION ALL
SELECT c.organization, c.basis, c.granularity, c.day
FROM coarse c
ANTI JOIN coarse_taken t ON t.organization = c.organization AND t.basis = c.basis AND t.granularity = c.granularity AND t.bucket = c.bucket
ANTI JOIN weeks_taken y ON y.organization = c.organization AND y.basis = c.basis AND y.bucket = c.bucket
WHERE c.granularity = 'year';
