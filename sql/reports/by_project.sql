-- by_project: what each project's usage in the report month is worth, per
-- currency, split by how it is paid (billed directly, drawn from a balance,
-- covered by a license, other entitlement types). Quantities are left out:
-- they add up different meters' units and mean nothing summed.
--
-- Parameters: $basis, $granularity, $month_start, $month_end (exclusive).
WITH m AS (
    SELECT nullif(project, '') AS project,
           currency,
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
SELECT project,
       currency,
       count(*) AS rows,
       CAST(coalesce(sum(cost) FILTER (WHERE category = 'direct'), 0) AS VARCHAR) AS direct,
       CAST(coalesce(sum(cost) FILTER (WHERE category = 'balance'), 0) AS VARCHAR) AS balance,
       CAST(coalesce(sum(cost) FILTER (WHERE category = 'license'), 0) AS VARCHAR) AS license,
       CAST(coalesce(sum(cost) FILTER (WHERE category = 'other'), 0) AS VARCHAR) AS other,
       CAST(sum(cost) AS VARCHAR) AS total
FROM m
GROUP BY project, currency
ORDER BY project NULLS LAST, currency;
