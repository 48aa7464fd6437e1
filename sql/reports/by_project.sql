-- by_project: what each project's usage in the report month is worth, per
-- currency, split by how it is paid (billed directly, drawn from a balance,
-- covered by a license, other entitlement types: month_paid's split,
-- summed in month_paid_by).
-- Quantities are left out: they add up different meters' units and mean
-- nothing summed.
--
-- Parameters: $basis, $granularity, $month_start, $month_end (exclusive).
SELECT project, currency, * EXCLUDE (level, organization, project, currency)
FROM month_paid_by
WHERE level = 'project'
ORDER BY project NULLS LAST, currency;
