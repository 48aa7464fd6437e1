-- entitlement_coverage: how much of each project's usage value entitlements
-- cover, per calendar month (UTC), basis, meter and currency: billed
-- directly, drawn from a prepaid balance (cash, quantity, pre-commitment),
-- covered by a license, or under another entitlement type (shown apart,
-- never guessed), and the covered share (balance + license) of the total.
--
-- Rows are those of the finest granularity loaded for each basis. Entitlement
-- types are compared lowercased with non-letters dropped, as the workbook
-- does.
CREATE OR REPLACE VIEW entitlement_coverage AS
WITH finest AS (
    SELECT basis,
           arg_min(granularity, CASE granularity WHEN 'hour' THEN 1 WHEN 'day' THEN 2 WHEN 'week' THEN 3 WHEN 'month' THEN 4 ELSE 5 END) AS granularity
    FROM usage
    GROUP BY basis
),
u AS (
    SELECT u.*,
           CASE WHEN u.basis = 'reported' THEN u.date_processed ELSE u.date END AS period_at,
           CASE
               WHEN nullif(trim(u.entitlement_type), '') IS NULL THEN 'direct'
               WHEN regexp_replace(lower(u.entitlement_type), '[^a-z]', '', 'g') = 'license' THEN 'license'
               WHEN regexp_replace(lower(u.entitlement_type), '[^a-z]', '', 'g') IN ('cash', 'quantity', 'precommitment') THEN 'balance'
               ELSE 'other'
           END AS paid_as
    FROM usage u
    JOIN finest f ON f.basis = u.basis AND f.granularity = u.granularity
),
m AS (
    SELECT basis,
           CAST(date_trunc('month', period_at) AS DATE) AS month,
           project,
           meter_name,
           currency,
           count(*) AS rows,
           sum(cost) AS cost,
           coalesce(sum(cost) FILTER (WHERE paid_as = 'direct'), 0) AS billed_directly,
           coalesce(sum(cost) FILTER (WHERE paid_as = 'balance'), 0) AS from_balance,
           coalesce(sum(cost) FILTER (WHERE paid_as = 'license'), 0) AS license_covered,
           coalesce(sum(cost) FILTER (WHERE paid_as = 'other'), 0) AS other_entitlement
    FROM u
    GROUP BY basis, CAST(date_trunc('month', period_at) AS DATE), project, meter_name, currency
)
SELECT *,
       CASE WHEN cost <> 0 THEN CAST(from_balance + license_covered AS DOUBLE) / CAST(cost AS DOUBLE) END AS covered_share
FROM m;
