-- detail: every usage row of the report month, as loaded, in a fixed order
-- so the same data always gives the same sheet. Streamed to the Detail
-- sheets row by row, never held whole.
--
-- Parameters: $basis, $granularity, $month_start, $month_end (exclusive),
-- and $detail_from, $detail_to: the range of `date` to read (end
-- exclusive), a few days of the month at a time (see detail_days.sql).
-- Since `date` leads the order, the ranges read one after another give
-- the month's rows in order.
SELECT date,
       date_processed,
       nullif(project, '') AS project,
       nullif(family, '') AS family,
       nullif(solution, '') AS solution,
       meter_name,
       nullif(meter_sku, '') AS meter_sku,
       quantity,
       nullif(unit, '') AS unit,
       price,
       CAST(cost AS VARCHAR) AS cost,
       currency,
       nullif(trim(entitlement_type), '') AS entitlement_type,
       paid_as AS category,
       nullif(entitlement, '') AS entitlement,
       nullif(payment_method, '') AS payment_method,
       nullif(payment_method_name, '') AS payment_method_name,
       CAST(run_id AS VARCHAR) AS run_id,
       fetched_at
FROM month_usage
WHERE date >= CAST($detail_from AS TIMESTAMP) AND date < CAST($detail_to AS TIMESTAMP)
ORDER BY date, date_processed NULLS LAST, project NULLS LAST, meter_name, meter_sku NULLS LAST,
         payment_method NULLS LAST, currency, entitlement_type NULLS FIRST, entitlement NULLS FIRST,
         cost, quantity, price NULLS FIRST, unit NULLS FIRST, family NULLS FIRST, solution NULLS FIRST,
         payment_method_name NULLS FIRST, CAST(run_id AS VARCHAR), fetched_at;
