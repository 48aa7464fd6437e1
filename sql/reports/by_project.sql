-- by_project: what each project's usage in the report month is worth, per
-- currency, split by how it is paid (billed directly, drawn from a balance,
-- covered by a license, other entitlement types: month_paid's split).
-- Quantities are left out: they add up different meters' units and mean
-- nothing summed.
--
-- Parameters: $basis, $granularity, $month_start, $month_end (exclusive).
SELECT nullif(CASE WHEN $group THEN organization || '/' || coalesce(project, '') ELSE project END, '') AS project,
       currency,
       CAST(sum(rows) AS BIGINT) AS rows,
       CAST(sum(direct) AS VARCHAR) AS direct,
       CAST(sum(balance) AS VARCHAR) AS balance,
       CAST(sum(license) AS VARCHAR) AS license,
       CAST(sum(other) AS VARCHAR) AS other,
       CAST(sum(total) AS VARCHAR) AS total
FROM month_paid
GROUP BY 1, currency
ORDER BY project NULLS LAST, currency;
