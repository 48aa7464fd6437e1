-- flags: what in the report month's usage needs a person to look at it
-- before signing off. One row per flagged group:
--
--   outside_validity  usage charged to a payment method on a day outside
--                     the method's validity (start_date inclusive, end_date
--                     exclusive, NULL unbounded; the usage day is compared),
--                     per method, currency and side (before / after);
--   unknown_entitlement  rows usage_rows pays as 'other': an entitlement
--                     type that is not license, cash, quantity or
--                     pre-commitment, or an entitlement with no type; per
--                     type as sent (NULL: none) and currency;
--   not_charged       rows with no date_processed in a closed month, per
--                     project and currency: charges that may still arrive.
--
-- Validity is read from the payment method as it stood that month
-- (payment_methods_by_month). Rate card
-- variances are flagged on the Rate card check and come from
-- rate_card_check.sql.
--
-- Parameters: $basis, $granularity, $month_start, $month_end (exclusive),
-- $closed (the month is over).
--
-- m is read three times; NOT MATERIALIZED has each read scan usage again
-- rather than hold the whole month's rows in memory.
WITH m AS NOT MATERIALIZED (
    SELECT *, CAST(date AS DATE) AS day
    FROM month_usage
),
pm AS (
    SELECT id, display_name, start_date, end_date
    FROM payment_methods_by_month
    WHERE month = CAST($month_start AS DATE)
),
flagged AS (
    SELECT 1 AS kind_order,
           'outside_validity' AS kind,
           m.payment_method AS subject,
           coalesce(nullif(pm.display_name, ''), min(nullif(m.payment_method_name, ''))) AS subject_name,
           CASE WHEN pm.start_date IS NOT NULL AND m.day < pm.start_date THEN 'before start' ELSE 'on or after end' END AS side,
           pm.start_date AS valid_from,
           pm.end_date AS valid_until,
           m.currency,
           min(m.day) AS first_day,
           max(m.day) AS last_day,
           count(*) AS rows,
           sum(m.cost) AS cost
    FROM m
    JOIN pm ON pm.id = m.payment_method
    WHERE (pm.start_date IS NOT NULL AND m.day < pm.start_date)
       OR (pm.end_date IS NOT NULL AND m.day >= pm.end_date)
    GROUP BY m.payment_method, pm.display_name, side, pm.start_date, pm.end_date, m.currency

    UNION ALL

    SELECT 2, 'unknown_entitlement', entitlement_type, NULL, NULL, NULL, NULL,
           currency, min(day), max(day), count(*), sum(cost)
    FROM m
    WHERE paid_as = 'other'
    GROUP BY entitlement_type, currency

    UNION ALL

    SELECT 3, 'not_charged', nullif(project, ''), NULL, NULL, NULL, NULL,
           currency, min(day), max(day), count(*), sum(cost)
    FROM m
    WHERE $closed AND date_processed IS NULL
    GROUP BY nullif(project, ''), currency
)
SELECT kind,
       subject,
       subject_name,
       side,
       valid_from,
       valid_until,
       currency,
       first_day,
       last_day,
       rows,
       CAST(cost AS VARCHAR) AS cost
FROM flagged
ORDER BY kind_order, subject NULLS LAST, side, currency;
