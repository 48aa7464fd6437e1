-- allocation_charges: the charges chargeback splits: per basis, month,
-- currency, project, meter, family, payment method and paid-as (see
-- usage_rows), the usage value (exact) and the quantity, from usage_finest:
-- summed from its daily totals (usage_finest_days), not row by row.
--
-- period is the partition every chargeback figure is computed within:
-- rules, cost centres' own usage and drivers are per period; money is
-- further kept apart by currency. It is defined here only: the
-- organization, basis and month (each organization's shared costs are
-- split by its own usage).
CREATE OR REPLACE VIEW allocation_charges AS
SELECT {'organization': organization, 'basis': basis, 'month': month} AS period, -- the partition: organization, basis and month
       organization, -- the organization (organizations.name)
       basis, -- usage or reported
       month, -- first day of the month, UTC
       currency, -- ISO 4217 code; never added to another currency
       project, -- project name
       meter_name, -- the meter
       family, -- the meter's family
       payment_method, -- payment method id
       paid_as, -- direct, balance, license or other, as usage_rows
       sum(cost) AS cost, -- usage value, exact
       sum(quantity) AS quantity -- units accrued
FROM usage_finest_days
GROUP BY ALL;
