-- payment_method_violations: usage charged to a payment method that the
-- billing rules question, per basis, calendar month (UTC), payment method,
-- problem and currency, with the rows, the cost, the first and last day
-- concerned and the method as it stood that month. The rules are
-- usage_validity's; problem is one of
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
CREATE OR REPLACE VIEW payment_method_violations AS
WITH v AS (
    SELECT v.*
    FROM usage_validity v
    SEMI JOIN usage_coverage c
        ON c.organization = v.organization AND c.basis = v.basis AND c.granularity = v.granularity AND c.day = CAST(v.period_at AS DATE)
),
-- The rows are summed per validity and method before their problems are
-- listed: the list is the same for all of them, and made once per group
-- rather than once per row. Sums of sums are exact (DECIMAL).
g AS (
    SELECT organization, basis, pm_month, payment_method, pm_display_name, pm_type, validity, method_problems,
           valid_from, valid_until, pm_is_active, pm_terms_accepted, pm_auto_purchase_stream_licenses, currency,
           min(nullif(payment_method_name, '')) AS payment_method_name,
           min(date) AS first_at,
           max(date) AS last_at,
           count(*) AS rows,
           sum(cost) AS cost,
           sum(CASE WHEN streaming_auto_purchase THEN cost ELSE 0 END) AS streaming_auto_purchase
    FROM v
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
