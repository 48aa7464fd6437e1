-- meter_months: the months (UTC) each payment method, meter and sku was
-- used in (by date) or charged in (by date_processed): usage_meter_days'
-- months, once each. The snapshots in force and the rate card matches
-- are found for these months.
--
-- In the database this view reads daily_usage_totals, which holds every
-- loaded row's month of date and of date_processed, so it reads days, not
-- usage rows. The workbook, which inlines the views with usage_meter_days
-- read for the report month only, uses this definition instead.
CREATE OR REPLACE VIEW meter_months AS
SELECT DISTINCT organization, -- the organization (organizations.name)
       CAST(date_trunc('month', day) AS DATE) AS month, -- the month's first day
       payment_method, -- the payment method id; NULL when none
       meter_name,
       sku_key -- the meter's sku, '' when none
FROM usage_meter_days;
