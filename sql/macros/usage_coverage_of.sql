-- usage_coverage_of: the usage_coverage view's rows (see the view for the
-- rule) as the fetch_windows of organization windows_org that end after
-- the day windows_from and start before the day windows_to decide them
-- (each NULL: any). Which granularity counts for a day depends on the
-- windows of that day's month alone, so a load's refresh of some days
-- (store/daycost.go) passes their months' bounds and one organization, and
-- reads neither the other organizations' ledgers nor the years before;
-- the view passes NULLs. A macro rather than the view's own text so that
-- every connection calls this Tally's rule (macros are defined anew on
-- each, TEMP), also on a copy an older Tally published.
CREATE OR REPLACE MACRO usage_coverage_of(windows_org, windows_from, windows_to) AS TABLE
    WITH cov AS (
        SELECT DISTINCT w.organization, w.basis, w.granularity, CAST(d.day AS DATE) AS day
        FROM fetch_windows w,
             LATERAL (SELECT unnest(generate_series(CAST(w.start AS TIMESTAMP), CAST(w."end" AS TIMESTAMP) - INTERVAL 1 DAY, INTERVAL 1 DAY)) AS day) d
        WHERE w."end" > w.start
          AND (windows_org IS NULL OR w.organization = windows_org)
          AND (windows_from IS NULL OR w."end" > windows_from)
          AND (windows_to IS NULL OR w.start < windows_to)
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
