-- usage_meter_days: each usage row's payment method, meter and sku on each
-- UTC day it counts in: the day of date (when it happened) and, once
-- charged, the day of date_processed (when it was charged). A row not yet
-- charged gives one row, a charged one two. snapshots_in_force and
-- rate_card_matches find the months each payment method and meter were
-- used in here.
--
-- day is the usage table's date (or date_processed) cut to the day, so a
-- filter on day reaches the table's scan: the workbook reads the report
-- month's days only, not the history.
CREATE OR REPLACE VIEW usage_meter_days AS
SELECT organization, -- the organization (organizations.name)
       CAST(date AS DATE) AS day, -- the UTC day
       payment_method, -- the payment method id; NULL when none
       meter_name,
       coalesce(meter_sku, '') AS sku_key -- the meter's sku, '' when none
FROM usage
UNION ALL
SELECT organization, CAST(date_processed AS DATE), payment_method, meter_name, coalesce(meter_sku, '')
FROM usage
WHERE date_processed IS NOT NULL;
