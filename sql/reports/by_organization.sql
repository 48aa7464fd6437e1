-- by_organization: the report month's usage value per organization and
-- currency, split by how it is paid (month_paid, summed in month_paid_by). A group workbook's
-- sheet: each row equals that organization's own workbook's total.
SELECT organization, currency, * EXCLUDE (level, organization, project, currency)
FROM month_paid_by
WHERE level = 'organization'
ORDER BY organization, currency;
