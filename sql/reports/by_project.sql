-- by_project: what each project's usage in the report month is worth, per
-- currency, split by how it is paid (billed directly, drawn from a balance,
-- covered by a license, other entitlement types). Quantities are left out:
-- they add up different meters' units and mean nothing summed.
--
-- Parameters: $basis, $granularity, $month_start, $month_end (exclusive).
SELECT nullif(CASE WHEN $group THEN organization || '/' || coalesce(project, '') ELSE project END, '') AS project,
       currency,
       count(*) AS rows,
       CAST(coalesce(sum(cost) FILTER (WHERE paid_as = 'direct'), 0) AS VARCHAR) AS direct,
       CAST(coalesce(sum(cost) FILTER (WHERE paid_as = 'balance'), 0) AS VARCHAR) AS balance,
       CAST(coalesce(sum(cost) FILTER (WHERE paid_as = 'license'), 0) AS VARCHAR) AS license,
       CAST(coalesce(sum(cost) FILTER (WHERE paid_as = 'other'), 0) AS VARCHAR) AS other,
       CAST(sum(cost) AS VARCHAR) AS total
FROM month_usage
GROUP BY 1, currency
ORDER BY project NULLS LAST, currency;
