-- payment_method_violations: usage charged to a payment method on a day
-- outside the method's validity (start_date inclusive, end_date exclusive,
-- NULL unbounded), per basis, calendar month (UTC), payment method, side
-- ('before start' or 'on or after end') and currency, with the rows, the
-- cost, the first and last day concerned and the validity as it stood.
--
-- Validity is read from the payment method's snapshot in force for the
-- month (the latest taken before the first of the next month, else the
-- earliest). The usage day is compared (the day of date). Rows are those
-- of the finest granularity loaded for each basis.
CREATE OR REPLACE VIEW payment_method_violations AS
WITH u AS (
    SELECT u.*,
           CAST(u.date AS DATE) AS day,
           date_trunc('month', u.period_at) AS month_start
    FROM usage_finest u
    WHERE u.payment_method IS NOT NULL
),
months AS (
    SELECT DISTINCT month_start FROM u
),
in_force AS (
    SELECT m.month_start,
           s.id,
           coalesce(max(s.snapshot_at) FILTER (WHERE s.snapshot_at < m.month_start + INTERVAL 1 MONTH),
                    min(s.snapshot_at)) AS snapshot_at
    FROM months m
    CROSS JOIN (SELECT DISTINCT id, snapshot_at FROM payment_method_snapshots) s
    GROUP BY m.month_start, s.id
),
pm AS (
    SELECT f.month_start, s.id, s.display_name, s.type, s.start_date, s.end_date, s.is_active
    FROM in_force f
    JOIN payment_method_snapshots s ON s.id = f.id AND s.snapshot_at = f.snapshot_at
    QUALIFY row_number() OVER (PARTITION BY f.month_start, s.id ORDER BY CAST(s.raw AS VARCHAR), CAST(s.spec AS VARCHAR)) = 1
)
SELECT u.basis,
       CAST(u.month_start AS DATE) AS month,
       u.payment_method,
       coalesce(nullif(pm.display_name, ''), min(nullif(u.payment_method_name, ''))) AS payment_method_name,
       pm.type,
       CASE WHEN pm.start_date IS NOT NULL AND u.day < pm.start_date THEN 'before start' ELSE 'on or after end' END AS side,
       pm.start_date AS valid_from,
       pm.end_date AS valid_until,
       pm.is_active,
       u.currency,
       min(u.day) AS first_day,
       max(u.day) AS last_day,
       count(*) AS rows,
       sum(u.cost) AS cost
FROM u
JOIN pm ON pm.month_start = u.month_start AND pm.id = u.payment_method
WHERE (pm.start_date IS NOT NULL AND u.day < pm.start_date)
   OR (pm.end_date IS NOT NULL AND u.day >= pm.end_date)
GROUP BY u.basis, u.month_start, u.payment_method, pm.display_name, pm.type, side, pm.start_date, pm.end_date, pm.is_active, u.currency;
