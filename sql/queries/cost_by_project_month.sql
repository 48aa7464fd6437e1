-- cost_by_project_month: what each project cost per calendar month, per
-- currency and basis (never summed across currencies or bases).
--
-- It sums the daily totals the load keeps (usage_day_totals), not the
-- usage rows.
SELECT organization,
       basis,
       date_month AS month,
       project,
       currency,
       sum(cost) AS cost,
       CAST(sum(rows) AS BIGINT) AS rows
FROM usage_day_totals
WHERE granularity = (SELECT min_by(granularity, CASE granularity WHEN 'hour' THEN 1 WHEN 'day' THEN 2 WHEN 'week' THEN 3 WHEN 'month' THEN 4 ELSE 5 END) FROM usage_day_totals)
GROUP BY organization, basis, date_month, project, currency
ORDER BY organization, basis, month, project, currency;
