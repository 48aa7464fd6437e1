-- month_paid_by: month_paid's split summed for the sheets of totals, per
-- currency at three levels: 'organization' (by_organization), 'project'
-- (by_project: organization/project in a group workbook, $group; NULL
-- for usage without a project) and 'currency' (summary_totals). Not a
-- sheet: reports puts it in front of every query, as month_paid, so the
-- sums each of those sheets shows are written once. Money is summed as
-- DECIMAL and returned as text so no float ever touches it; never a total
-- across currencies.
WITH keyed AS (
    SELECT *, nullif(CASE WHEN $group THEN organization || '/' || coalesce(project, '') ELSE project END, '') AS project_key
    FROM month_paid
)
SELECT CASE
           WHEN grouping(organization) = 0 THEN 'organization'
           WHEN grouping(project_key) = 0 THEN 'project'
           ELSE 'currency'
       END AS level,
       organization,
       project_key AS project,
       currency,
       CAST(sum(rows) AS BIGINT) AS rows,
       CAST(sum(direct) AS VARCHAR) AS direct,
       CAST(sum(balance) AS VARCHAR) AS balance,
       CAST(sum(license) AS VARCHAR) AS license,
       CAST(sum(other) AS VARCHAR) AS other,
       CAST(sum(total) AS VARCHAR) AS total
FROM keyed
GROUP BY GROUPING SETS ((organization, currency), (project_key, currency), (currency))
