-- by_organization: the report month's usage value per organization and
-- currency, split by how it is paid (see by_project). A group workbook's
-- sheet: each row equals that organization's own workbook's total.
SELECT organization,
       currency,
       count(*) AS rows,
       CAST(coalesce(sum(cost) FILTER (WHERE paid_as = 'direct'), 0) AS VARCHAR) AS direct,
       CAST(coalesce(sum(cost) FILTER (WHERE paid_as = 'balance'), 0) AS VARCHAR) AS balance,
       CAST(coalesce(sum(cost) FILTER (WHERE paid_as = 'license'), 0) AS VARCHAR) AS license,
       CAST(coalesce(sum(cost) FILTER (WHERE paid_as = 'other'), 0) AS VARCHAR) AS other,
       CAST(sum(cost) AS VARCHAR) AS total
FROM month_usage
GROUP BY organization, currency
ORDER BY organization, currency;
