-- usage_validity: each usage row charged to a payment method, judged
-- against the method as it stood in the row's month (payment_methods_by_month,
-- month of period_at). The one place the billing rules on payment methods
-- live: payment_method_violations and the workbook's Flags read them here.
--
-- validity judges the usage bucket, [date, bucket_end) with bucket_end =
-- date + 1 granularity unit, against the method's validity (start_date
-- inclusive, end_date exclusive, NULL unbounded):
--   'valid'            the bucket lies wholly inside the validity;
--   'before start'     wholly before start_date (a violation);
--   'on or after end'  wholly on or after end_date (a violation);
--   'cannot tell'      the bucket straddles start_date or end_date: at this
--                      granularity Tally cannot say whether the usage fell
--                      inside; never counted as a violation nor as fine.
-- method_problems lists what is wrong with the method itself while usage
-- is charged to it: 'end not after start' (end_date <= start_date, both
-- set), 'inactive' (status.isActive false), 'terms not accepted'
-- (status.termsAndConditionsAccepted false). NULL flags are not problems.
--
-- streaming_auto_purchase is true for streaming usage (solution
-- 'Streaming', compared lowercased) charged to a method with
-- autoPurchaseStreamLicenses true: the interface says such streaming is
-- billed through monthly charges, not by the minute, but not how, so the
-- cost is counted as sent and only shown.
CREATE OR REPLACE VIEW usage_validity AS
WITH b AS (
    SELECT u.*,
           u.date + CASE u.granularity
               WHEN 'hour' THEN INTERVAL 1 HOUR
               WHEN 'day' THEN INTERVAL 1 DAY
               WHEN 'week' THEN INTERVAL 7 DAY
               WHEN 'month' THEN INTERVAL 1 MONTH
               ELSE INTERVAL 1 YEAR
           END AS bucket_end,
           CAST(date_trunc('month', u.period_at) AS DATE) AS pm_month
    FROM usage_rows u
    WHERE u.payment_method IS NOT NULL
)
SELECT b.*,
       pm.display_name AS pm_display_name,
       pm.type AS pm_type,
       pm.start_date AS valid_from,
       pm.end_date AS valid_until,
       pm.is_active AS pm_is_active,
       pm.terms_and_conditions_accepted AS pm_terms_accepted,
       pm.auto_purchase_stream_licenses AS pm_auto_purchase_stream_licenses,
       CASE
           WHEN pm.start_date IS NOT NULL AND b.bucket_end <= pm.start_date THEN 'before start'
           WHEN pm.end_date IS NOT NULL AND b.date >= pm.end_date THEN 'on or after end'
           WHEN (pm.start_date IS NULL OR b.date >= pm.start_date)
            AND (pm.end_date IS NULL OR b.bucket_end <= pm.end_date) THEN 'valid'
           ELSE 'cannot tell'
       END AS validity,
       pm.method_problems,
       coalesce(lower(b.solution) = 'streaming' AND pm.auto_purchase_stream_licenses, false) AS streaming_auto_purchase
FROM b
-- The method's own problems are the month's (payment_methods_by_month's
-- method_problems), listed once per method and month rather than for each
-- of its rows.
JOIN payment_methods_by_month pm ON pm.organization = b.organization AND pm.month = b.pm_month AND pm.id = b.payment_method;
