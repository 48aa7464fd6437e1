-- project_monthly_cost: what each project cost per calendar month (UTC),
-- per basis and currency: the usage value and what the invoice charges for
-- it (billed directly or under an entitlement type Tally does not know;
-- not what a license covers or a prepaid balance pays). Never summed
-- across currencies or bases.
--
-- Rows are usage_finest's: the finest granularity loaded for each basis,
-- so a charge loaded at two granularities counts once. The month is that of
-- date for basis usage and of date_processed (when charged, as invoices
-- count) for basis reported. It sums their daily totals
-- (usage_finest_days), whose month is stored: WHERE month = … reads that
-- month only.
CREATE OR REPLACE VIEW project_monthly_cost AS
SELECT organization,
       basis,
       granularity,
       month,
       project,
       currency,
       CAST(sum(rows) AS BIGINT) AS rows,
       sum(cost) AS cost,
       coalesce(sum(cost) FILTER (WHERE is_billed(paid_as)), 0) AS billed_cost
FROM usage_finest_days
GROUP BY organization, basis, granularity, month, project, currency;
