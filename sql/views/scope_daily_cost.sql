-- scope_daily_cost: what each budget scope cost per UTC day and currency,
-- on basis usage (when the usage happened): the whole organization
-- (scope_kind all, scope ''), each project, each payment method (its id),
-- each meter family and each cost centre (its own projects, as the
-- config of the latest run names them in allocation_cost_centres; shared
-- costs are split once a month, by cost_allocation, not day by day).
-- Budgets, forecasts and their chart read it.
--
-- Rows are usage_day_cost's: usage_finest's at hour or day granularity
-- (a week, month or year bucket cannot be split into days, so days only
-- such buckets cover are left out). A filter on day reads only those days.
-- The cost is the usage value, every row as the interface reports it,
-- whatever pays it.
CREATE OR REPLACE VIEW scope_daily_cost AS
WITH d AS (
    SELECT organization, day, project, payment_method, family, currency, cost
    FROM usage_day_cost
)
SELECT day, -- the UTC day
       'all' AS scope_kind, -- all, project, payment_method, family, organization or cost_centre
       '' AS scope, -- the project name (in every organization), payment method id, family, organization name or cost centre; '' for all (and for rows without one)
       currency,
       sum(cost) AS cost
FROM d GROUP BY ALL
UNION ALL
SELECT day, 'project', coalesce(project, ''), currency, sum(cost) FROM d GROUP BY ALL
UNION ALL
SELECT day, 'payment_method', coalesce(payment_method, ''), currency, sum(cost) FROM d GROUP BY ALL
UNION ALL
SELECT day, 'family', coalesce(family, ''), currency, sum(cost) FROM d GROUP BY ALL
UNION ALL
SELECT day, 'organization', organization, currency, sum(cost) FROM d GROUP BY ALL
UNION ALL
SELECT d.day, 'cost_centre', c.cost_centre, d.currency, sum(d.cost)
FROM d JOIN allocation_cost_centres c ON c.close_id IS NULL AND c.project = d.project
GROUP BY ALL;
