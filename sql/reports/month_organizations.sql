-- month_organizations: how many organizations the report month's rows
-- belong to; more than one makes the workbook a group's, with a By
-- organization sheet and projects named within their organization.
SELECT count(DISTINCT organization) FROM month_usage;
