-- allocation_charges: the charges chargeback splits: per basis, month,
-- currency, project, meter, family, payment method and paid-as (see
-- usage_rows), the usage value (exact) and the quantity, from usage_finest.
--
-- In the database this view sums the same from usage_finest's daily totals
-- (usage_finest_days, kept by the load), so reading every month reads
-- days, not usage rows; the workbook's Chargeback sheet inlines this
-- definition over the report month's rows in place of usage_finest.
--
-- period is the partition every chargeback figure is computed within:
-- rules, cost centres' own usage and drivers are per period; money is
-- further kept apart by currency. It is defined here only: the
-- organization, basis and month (each organization's shared costs are
-- split by its own usage).
CREATE OR REPLACE VIEW allocation_charges AS
SELECT {'organization': organization, 'basis': basis, 'month': CAST(date_trunc('month', period_at) AS DATE)} AS period, -- the partition: organization, basis and month
       organization, -- the organization (organizations.name)
       basis, -- usage or reported
       CAST(date_trunc('month', period_at) AS DATE) AS month, -- first day of the month, UTC
       currency, -- ISO 4217 code; never added to another currency
       project, -- project name
       meter_name, -- the meter
       family, -- the meter's family
       payment_method, -- payment method id
       paid_as, -- direct, balance, license or other, as usage_rows
       sum(cost) AS cost, -- usage value, exact
       sum(CAST(quantity AS DECIMAL(38, 12))) AS quantity -- units accrued
FROM usage_finest
GROUP BY ALL;
