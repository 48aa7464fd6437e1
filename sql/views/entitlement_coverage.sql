-- entitlement_coverage: how much of each project's usage value entitlements
-- cover, per calendar month (UTC), basis, meter and currency: billed
-- directly, drawn from a prepaid balance (cash, quantity, pre-commitment),
-- covered by a license, or under another entitlement type (shown apart,
-- never guessed), and the covered share (balance + license) of the total.
--
-- Rows are usage_finest's: the finest granularity loaded for each basis,
-- each paid as usage_rows says, as in the workbook, summed from their
-- daily totals (usage_finest_days), whose month is stored: WHERE month = …
-- reads that month only.
CREATE OR REPLACE VIEW entitlement_coverage AS
WITH m AS (
    SELECT organization,
           basis,
           month,
           project,
           meter_name,
           currency,
           CAST(sum(rows) AS BIGINT) AS rows,
           sum(cost) AS cost,
           coalesce(sum(cost) FILTER (WHERE paid_as = 'direct'), 0) AS billed_directly,
           coalesce(sum(cost) FILTER (WHERE paid_as = 'balance'), 0) AS from_balance,
           coalesce(sum(cost) FILTER (WHERE paid_as = 'license'), 0) AS license_covered,
           coalesce(sum(cost) FILTER (WHERE paid_as = 'other'), 0) AS other_entitlement
    FROM usage_finest_days
    GROUP BY organization, basis, month, project, meter_name, currency
)
SELECT *,
       CASE WHEN cost <> 0 THEN CAST(from_balance + license_covered AS DOUBLE) / CAST(cost AS DOUBLE) END AS covered_share
FROM m;
