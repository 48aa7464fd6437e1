-- summary_totals: for the report month, what the usage is worth per currency
-- and how it is paid: billed directly (no entitlement), drawn from a balance
-- (cash, quantity or pre-commitment entitlements), covered by a license, or
-- under an entitlement type Tally does not know. One row per currency; never
-- a total across currencies. Money is summed as DECIMAL and returned as text
-- so no float ever touches it.
--
-- Parameters: $basis, $granularity, $month_start, $month_end (exclusive).
-- Entitlement types are compared lowercased with non-letters dropped, so
-- "PreCommitment", "pre-commitment" and "Pre Commitment" are one type; an
-- empty type counts as no entitlement.
WITH m AS (
    SELECT currency,
           cost,
           CASE
               WHEN nullif(trim(entitlement_type), '') IS NULL THEN 'direct'
               WHEN regexp_replace(lower(entitlement_type), '[^a-z]', '', 'g') = 'license' THEN 'license'
               WHEN regexp_replace(lower(entitlement_type), '[^a-z]', '', 'g') IN ('cash', 'quantity', 'precommitment') THEN 'balance'
               ELSE 'other'
           END AS category
    FROM usage
    WHERE basis = $basis
      AND granularity = $granularity
      AND (($basis = 'usage' AND date >= $month_start AND date < $month_end)
        OR ($basis = 'reported' AND date_processed >= $month_start AND date_processed < $month_end))
)
SELECT currency,
       count(*) AS rows,
       CAST(coalesce(sum(cost) FILTER (WHERE category = 'direct'), 0) AS VARCHAR) AS direct,
       CAST(coalesce(sum(cost) FILTER (WHERE category = 'balance'), 0) AS VARCHAR) AS balance,
       CAST(coalesce(sum(cost) FILTER (WHERE category = 'license'), 0) AS VARCHAR) AS license,
       CAST(coalesce(sum(cost) FILTER (WHERE category = 'other'), 0) AS VARCHAR) AS other,
       CAST(sum(cost) AS VARCHAR) AS total
FROM m
GROUP BY currency
ORDER BY currency;
