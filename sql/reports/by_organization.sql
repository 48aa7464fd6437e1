-- by_organization: the report month's usage value per organization and
-- currency, split by how it is paid (month_paid). A group workbook's
-- sheet: each row equals that organization's own workbook's total.
SELECT organization,
       currency,
       CAST(sum(rows) AS BIGINT) AS rows,
       CAST(sum(direct) AS VARCHAR) AS direct,
       CAST(sum(balance) AS VARCHAR) AS balance,
       CAST(sum(license) AS VARCHAR) AS license,
       CAST(sum(other) AS VARCHAR) AS other,
       CAST(sum(total) AS VARCHAR) AS total
FROM month_paid
GROUP BY organization, currency
ORDER BY organization, currency;
