-- payment_method_violations: usage charged to a payment method that the
-- billing rules question, per basis, calendar month (UTC), payment method,
-- problem and currency, with the rows, the cost, the first and last day
-- concerned and the method as it stood that month. The rules are
-- usage_validity's; problem names the rule the usage breaks (before start,
-- on or after end, inactive, terms not accepted, …).
--
-- problem is one of
--
--   'before start', 'on or after end'  the usage bucket lies wholly outside
--       the validity (violation true);
--   'cannot tell at this granularity'  the bucket straddles start_date or
--       end_date (violation false: neither a violation nor fine; fetch a
--       finer granularity to tell);
--   'end not after start', 'inactive', 'terms not accepted'  the method
--       itself (violation true).
--
-- A row with several problems is counted under each. Rows are those of
-- usage_finest (one granularity per basis and day). streaming_auto_purchase
-- is the cost of streaming usage charged to a method with
-- autoPurchaseStreamLicenses true (shown, not a violation).
--
-- It reads the rows' daily totals (usage_finest_days), not the rows: a
-- bucket's validity only changes with its start, in one direction (before
-- start, then valid, then on or after end, with 'cannot tell' at either
-- edge), so when a total's first and last bucket are judged alike (and
-- are one bucket, for 'cannot tell') all its rows are. The totals whose
-- first and last bucket differ (rows of one day of date and granularity:
-- only if dates are not on their bucket's start) are judged row by row
-- through usage_validity, whose rules these repeat.
CREATE OR REPLACE VIEW payment_method_violations AS
WITH pm AS (
    SELECT * FROM payment_methods_by_month
),
-- The totals summed further, per day (of period_at and of date),
-- granularity, method and currency: what the validity and the sums below
-- depend on; what holds for a total's first and last bucket holds for any
-- set of rows of one granularity.
t AS (
    SELECT organization, basis, granularity, month, day, date_day, payment_method, currency,
           min(payment_method_name) AS payment_method_name,
           min(first_at) AS first_at,
           max(last_at) AS last_at,
           sum(rows) AS rows,
           sum(cost) AS cost,
           sum(streaming_cost) AS streaming_cost,
           CASE granularity
               WHEN 'hour' THEN INTERVAL 1 HOUR
               WHEN 'day' THEN INTERVAL 1 DAY
               WHEN 'week' THEN INTERVAL 7 DAY
               WHEN 'month' THEN INTERVAL 1 MONTH
               ELSE INTERVAL 1 YEAR
           END AS width
    FROM usage_finest_days
    WHERE payment_method IS NOT NULL
    GROUP BY organization, basis, granularity, month, day, date_day, payment_method, currency
),
-- Each total with the method as it stood in its month (month is that of
-- period_at, as usage_validity's pm_month) and usage_validity's validity
-- of its first and of its last bucket.
j AS (
    SELECT j.*,
           CASE
               WHEN j.valid_from IS NOT NULL AND j.first_at + j.width <= j.valid_from THEN 'before start'
               WHEN j.valid_until IS NOT NULL AND j.first_at >= j.valid_until THEN 'on or after end'
               WHEN (j.valid_from IS NULL OR j.first_at >= j.valid_from)
                AND (j.valid_until IS NULL OR j.first_at + j.width <= j.valid_until) THEN 'valid'
               ELSE 'cannot tell'
           END AS first_validity,
           CASE
               WHEN j.valid_from IS NOT NULL AND j.last_at + j.width <= j.valid_from THEN 'before start'
               WHEN j.valid_until IS NOT NULL AND j.last_at >= j.valid_until THEN 'on or after end'
               WHEN (j.valid_from IS NULL OR j.last_at >= j.valid_from)
                AND (j.valid_until IS NULL OR j.last_at + j.width <= j.valid_until) THEN 'valid'
               ELSE 'cannot tell'
           END AS last_validity
    FROM (
        SELECT t.*,
               pm.display_name AS pm_display_name,
               pm.type AS pm_type,
               pm.start_date AS valid_from,
               pm.end_date AS valid_until,
               pm.is_active AS pm_is_active,
               pm.terms_and_conditions_accepted AS pm_terms_accepted,
               pm.auto_purchase_stream_licenses AS pm_auto_purchase_stream_licenses,
               pm.method_problems
        FROM t
        JOIN pm ON pm.organization = t.organization AND pm.month = t.month AND pm.id = t.payment_method
    ) j
),
-- The days (of a basis, granularity, day of date and method) that hold a
-- total judged row by row: all their rows are, the others by the total.
mixed AS (
    SELECT DISTINCT organization, basis, granularity, month, day, date_day, payment_method
    FROM j
    WHERE first_validity <> last_validity OR (first_validity = 'cannot tell' AND first_at <> last_at)
),
-- Sums per validity and method, from the totals and the rows judged one by
-- one, before their problems are listed: the list is the same for all of
-- them, and made once per group. Sums of sums are exact (DECIMAL).
g AS (
    SELECT organization, basis, pm_month, payment_method, pm_display_name, pm_type, validity, method_problems,
           valid_from, valid_until, pm_is_active, pm_terms_accepted, pm_auto_purchase_stream_licenses, currency,
           min(payment_method_name) AS payment_method_name,
           min(first_at) AS first_at,
           max(last_at) AS last_at,
           sum(rows) AS rows,
           sum(cost) AS cost,
           sum(streaming_auto_purchase) AS streaming_auto_purchase
    FROM (
        SELECT j.organization, j.basis, j.month AS pm_month, j.payment_method, j.pm_display_name, j.pm_type,
               j.first_validity AS validity, j.method_problems, j.valid_from, j.valid_until, j.pm_is_active,
               j.pm_terms_accepted, j.pm_auto_purchase_stream_licenses, j.currency, j.payment_method_name,
               j.first_at, j.last_at, j.rows, j.cost,
               CASE WHEN j.pm_auto_purchase_stream_licenses THEN coalesce(j.streaming_cost, 0) ELSE 0 END AS streaming_auto_purchase
        FROM j
        ANTI JOIN mixed m
            ON m.organization = j.organization AND m.basis = j.basis AND m.granularity = j.granularity AND m.day = j.day
           AND m.date_day = j.date_day AND m.payment_method = j.payment_method
        UNION ALL
        -- The month is the day's, taken from mixed: a condition on it
        -- then stops at these days, not at every usage row.
        SELECT v.organization, v.basis, m.month, v.payment_method, v.pm_display_name, v.pm_type,
               v.validity, v.method_problems, v.valid_from, v.valid_until, v.pm_is_active,
               v.pm_terms_accepted, v.pm_auto_purchase_stream_licenses, v.currency, nullif(v.payment_method_name, ''),
               v.date, v.date, 1, v.cost,
               CASE WHEN v.streaming_auto_purchase THEN v.cost ELSE 0 END
        FROM usage_validity v
        JOIN mixed m
            ON m.organization = v.organization AND m.basis = v.basis AND m.granularity = v.granularity
           AND m.day = CAST(v.period_at AS DATE) AND m.date_day = CAST(v.date AS DATE) AND m.payment_method = v.payment_method
    )
    GROUP BY ALL
),
p AS (
    SELECT g.*, unnest(
               CASE g.validity
                   WHEN 'valid' THEN []
                   WHEN 'cannot tell' THEN ['cannot tell at this granularity']
                   ELSE [g.validity]
               END || g.method_problems) AS problem
    FROM g
)
SELECT organization,
       basis,
       pm_month AS month,
       payment_method,
       coalesce(nullif(pm_display_name, ''), min(payment_method_name)) AS payment_method_name,
       pm_type AS type,
       problem,
       problem <> 'cannot tell at this granularity' AS violation,
       valid_from,
       valid_until,
       pm_is_active AS is_active,
       pm_terms_accepted AS terms_accepted,
       pm_auto_purchase_stream_licenses AS auto_purchase_stream_licenses,
       currency,
       CAST(min(first_at) AS DATE) AS first_day,
       CAST(max(last_at) AS DATE) AS last_day,
       CAST(sum(rows) AS BIGINT) AS rows,
       sum(cost) AS cost,
       sum(streaming_auto_purchase) AS streaming_auto_purchase
FROM p
GROUP BY organization, basis, pm_month, payment_method, pm_display_name, pm_type, problem, valid_from, valid_until,
         pm_is_active, pm_terms_accepted, pm_auto_purchase_stream_licenses, currency;
