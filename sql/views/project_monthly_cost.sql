-- project_monthly_cost: what each project cost per calendar month (UTC),
-- per basis and currency: the usage value and what the invoice charges for
-- it (billed directly or under an entitlement type Tally does not know;
-- not what a license covers or a prepaid balance pays). Never summed
-- across currencies or bases.
--
-- Rows are those of the finest granularity loaded for each basis, so a
-- charge loaded at two granularities counts once. The month is that of
-- date for basis usage and of date_processed (when charged, as invoices
-- count) for basis reported.
CREATE OR REPLACE VIEW project_monthly_cost AS
WITH finest AS (
    SELECT basis,
           arg_min(granularity, CASE granularity WHEN 'hour' THEN 1 WHEN 'day' THEN 2 WHEN 'week' THEN 3 WHEN 'month' THEN 4 ELSE 5 END) AS granularity
    FROM usage
    GROUP BY basis
),
u AS (
    SELECT u.*,
           CASE WHEN u.basis = 'reported' THEN u.date_processed ELSE u.date END AS period_at,
           regexp_replace(lower(coalesce(u.entitlement_type, '')), '[^a-z]', '', 'g') AS ent
    FROM usage u
    JOIN finest f ON f.basis = u.basis AND f.granularity = u.granularity
)
SELECT basis,
       granularity,
       CAST(date_trunc('month', period_at) AS DATE) AS month,
       project,
       currency,
       count(*) AS rows,
       sum(cost) AS cost,
       coalesce(sum(cost) FILTER (WHERE ent NOT IN ('license', 'cash', 'quantity', 'precommitment')), 0) AS billed_cost
FROM u
GROUP BY basis, granularity, CAST(date_trunc('month', period_at) AS DATE), project, currency;
