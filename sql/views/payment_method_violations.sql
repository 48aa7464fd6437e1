-- payment_method_violations: usage charged to a payment method on a day
-- outside the method's validity (start_date inclusive, end_date exclusive,
-- NULL unbounded), per basis, calendar month (UTC), payment method, side
-- ('before start' or 'on or after end') and currency, with the rows, the
-- cost, the first and last day concerned and the validity as it stood.
--
-- Validity is read from the payment method as it stood that month
-- (payment_methods_by_month). The usage day is compared (the day of date). Rows are those
-- of the finest granularity loaded for each basis.
CREATE OR REPLACE VIEW payment_method_violations AS
WITH u AS (
    SELECT u.*,
           CAST(u.date AS DATE) AS day,
           date_trunc('month', u.period_at) AS month_start
    FROM usage_finest u
    WHERE u.payment_method IS NOT NULL
),
pm AS (
    SELECT CAST(month AS TIMESTAMP) AS month_start, id, display_name, type, start_date, end_date, is_active
    FROM payment_methods_by_month
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
