-- flags: what in the report month's usage needs a person to look at it
-- before signing off. One row per flagged group:
--
--   outside_validity  usage whose bucket lies wholly outside the payment
--                     method's validity, per method, currency and side
--                     ('before start' / 'on or after end');
--   validity_unknown  usage whose bucket straddles the method's start or
--                     end date: at this granularity Tally cannot tell
--                     whether it was valid (side 'cannot tell'); neither
--                     a violation nor fine;
--   method_state      usage charged to a method whose end date is not
--                     after its start date, that is inactive or whose
--                     terms are not accepted (side names which);
--   stream_licenses   streaming usage charged to a method with
--                     autoPurchaseStreamLicenses true: billed through
--                     monthly charges rather than by the minute, per the
--                     interface; shown, the cost is counted as sent;
--   unknown_entitlement  rows usage_rows pays as 'other': an entitlement
--                     type that is not license, cash, quantity or
--                     pre-commitment, or an entitlement with no type; per
--                     type as sent (NULL: none) and currency;
--   not_charged       rows with no date_processed in a closed month, per
--                     project and currency: charges that may still arrive;
--   estimate_correction  estimated rows (basis estimated) of a negative
--                     quantity: a project's report said less than at the
--                     read before, per project and meter.
--
-- The payment method rules are usage_validity's (the method as it stood
-- that month, the bucket [date, date + 1 granularity) against start_date
-- inclusive and end_date exclusive); v reads it with month_usage's filter.
-- Rate card variances are flagged on the Rate card check and come from
-- rate_card_check.sql.
--
-- Parameters: $basis, $granularity, $month_start, $month_end (exclusive),
-- $closed (the month is over).
--
-- m and v are read more than once; NOT MATERIALIZED has each read scan
-- usage again rather than hold the whole month's rows in memory.
WITH m AS NOT MATERIALIZED (
    SELECT *, CAST(date AS DATE) AS day
    FROM month_usage
),
v AS NOT MATERIALIZED (
    SELECT *, CAST(date AS DATE) AS day
    FROM usage_validity
    WHERE ($org IS NULL OR organization = $org)
      AND basis = $basis
      AND granularity = $granularity
      AND in_report_month($basis, date, date_processed, $month_start, $month_end)
),
problems AS (
    SELECT *,
           unnest(CASE validity
                      WHEN 'valid' THEN []
                      WHEN 'cannot tell' THEN [{'kind': 'validity_unknown', 'ord': 2, 'side': 'cannot tell'}]
                      ELSE [{'kind': 'outside_validity', 'ord': 1, 'side': validity}]
                  END
                  || list_transform(method_problems, p -> {'kind': 'method_state', 'ord': 3, 'side': p})
                  || CASE WHEN streaming_auto_purchase THEN [{'kind': 'stream_licenses', 'ord': 4, 'side': NULL}] ELSE [] END) AS p
    FROM v
),
flagged AS (
    SELECT p.ord AS kind_order,
           p.kind AS kind,
           payment_method AS subject,
           coalesce(nullif(pm_display_name, ''), min(nullif(payment_method_name, ''))) AS subject_name,
           p.side AS side,
           valid_from,
           valid_until,
           currency,
           min(day) AS first_day,
           max(day) AS last_day,
           count(*) AS rows,
           sum(cost) AS cost
    FROM problems
    GROUP BY p.ord, p.kind, payment_method, pm_display_name, p.side, valid_from, valid_until, currency

    UNION ALL

    SELECT 5, 'unknown_entitlement', entitlement_type, NULL, NULL, NULL, NULL,
           currency, min(day), max(day), count(*), sum(cost)
    FROM m
    WHERE paid_as = 'other'
    GROUP BY entitlement_type, currency

    UNION ALL

    SELECT 6, 'not_charged', nullif(project, ''), NULL, NULL, NULL, NULL,
           currency, min(day), max(day), count(*), sum(cost)
    FROM m
    WHERE $closed AND date_processed IS NULL AND basis <> 'estimated' -- an estimate is never charged
    GROUP BY nullif(project, ''), currency

    UNION ALL

    SELECT 7, 'estimate_correction', nullif(project, ''), meter_name, NULL, NULL, NULL,
           currency, min(day), max(day), count(*), sum(cost)
    FROM m
    WHERE basis = 'estimated' AND quantity < 0
    GROUP BY nullif(project, ''), meter_name, currency
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
