-- cost_by_project_month: what each project cost per calendar month, per
-- currency and basis (never summed across currencies or bases).
SELECT basis,
       date_trunc('month', date)::DATE AS month,
       project,
       currency,
       sum(cost) AS cost,
       count(*) AS rows
FROM usage
WHERE granularity = (SELECT min_by(granularity, CASE granularity WHEN 'hour' THEN 1 WHEN 'day' THEN 2 WHEN 'week' THEN 3 WHEN 'month' THEN 4 ELSE 5 END) FROM usage)
GROUP BY ALL
ORDER BY basis, month, project, currency;
