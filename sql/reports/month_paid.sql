-- month_paid: the report month's usage value (month_usage) per
-- organization, project and currency, split by how it is paid (usage_rows'
-- paid_as): billed directly (no entitlement), drawn from a balance (cash,
-- quantity or pre-commitment entitlements), covered by a license, or under
-- an entitlement type Tally does not know. Not a sheet: month_paid_by
-- sums it further for summary_totals, by_organization and by_project
-- (reports puts both in front of every query, as month_usage), so the
-- split is written once. Sums of
-- DECIMAL sums are exact; never a total across currencies.
SELECT organization,
       project,
       currency,
       count(*) AS rows,
       coalesce(sum(cost) FILTER (WHERE paid_as = 'direct'), 0) AS direct,
       coalesce(sum(cost) FILTER (WHERE paid_as = 'balance'), 0) AS balance,
       coalesce(sum(cost) FILTER (WHERE paid_as = 'license'), 0) AS license,
       coalesce(sum(cost) FILTER (WHERE paid_as = 'other'), 0) AS other,
       sum(cost) AS total
FROM month_usage
GROUP BY organization, project, currency
