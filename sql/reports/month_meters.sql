-- month_meters: the meter_months view's rows of the report month only, in
-- its place in the queries about the month's payment methods and meters
-- (by payment method, flags, the rate card check): each payment method,
-- meter and sku used (date) or charged (date_processed) in the month.
-- meter_months finds them through usage_meter_days, whose day is the
-- usage table's date cut to the day; a condition on that day is not one
-- DuckDB can answer from the table's zone maps, so it read every month's
-- rows. This reads the month on the columns themselves, which it prunes.
--
-- Parameters: $month_start, $month_end (exclusive).
SELECT DISTINCT organization,
       CAST($month_start AS DATE) AS month,
       payment_method,
       meter_name,
       coalesce(meter_sku, '') AS sku_key
FROM (
    SELECT organization, payment_method, meter_name, meter_sku
    FROM usage
    WHERE date >= CAST($month_start AS TIMESTAMP) AND date < CAST($month_end AS TIMESTAMP)
    UNION ALL
    SELECT organization, payment_method, meter_name, meter_sku
    FROM usage
    WHERE date_processed >= CAST($month_start AS TIMESTAMP) AND date_processed < CAST($month_end AS TIMESTAMP)
)
