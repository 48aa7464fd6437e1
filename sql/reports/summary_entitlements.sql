-- summary_entitlements: for the report month, the usage value per currency
-- and entitlement type exactly as the interface sent it (unknown types are
-- shown by name, never mapped to a known one), with the payment category
-- Tally read it as. Backs the Summary's "by entitlement type" table.
--
-- Parameters: $basis, $granularity, $month_start, $month_end (exclusive).
SELECT currency,
       paid_as AS category,
       nullif(trim(entitlement_type), '') AS entitlement_type,
       count(*) AS rows,
       CAST(sum(cost) AS VARCHAR) AS cost
FROM month_usage
GROUP BY currency, paid_as, nullif(trim(entitlement_type), '')
ORDER BY currency,
         CASE category WHEN 'direct' THEN 1 WHEN 'balance' THEN 2 WHEN 'license' THEN 3 ELSE 4 END,
         entitlement_type NULLS FIRST;
