-- summary_entitlements: for the report month, the usage value per currency
-- and entitlement type exactly as the interface sent it (unknown types are
-- shown by name, never mapped to a known one), with the payment category
-- Tally read it as. Backs the Summary's "by entitlement type" table.
--
-- Parameters: $basis, $granularity, $month_start, $month_end (exclusive).
WITH m AS (
    SELECT currency,
           cost,
           nullif(trim(entitlement_type), '') AS entitlement_type,
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
       category,
       entitlement_type,
       count(*) AS rows,
       CAST(sum(cost) AS VARCHAR) AS cost
FROM m
GROUP BY currency, category, entitlement_type
ORDER BY currency,
         CASE category WHEN 'direct' THEN 1 WHEN 'balance' THEN 2 WHEN 'license' THEN 3 ELSE 4 END,
         entitlement_type NULLS FIRST;
