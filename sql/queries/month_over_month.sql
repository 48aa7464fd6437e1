-- month_over_month: each project's cost per meter in the latest complete
-- month (the one before the newest month loaded) against the month before,
-- with the change, largest change first, from the cost_month_over_month
-- view.
SELECT c.basis,
       c.month,
       c.project,
       c.meter_name,
       c.currency,
       c.previous_cost,
       c.cost,
       c.change,
       round(c.change_pct * 100, 2) AS change_percent
FROM cost_month_over_month c
JOIN (
    SELECT basis, CAST(max(month) - INTERVAL 1 MONTH AS DATE) AS month
    FROM cost_month_over_month
    GROUP BY basis
) l ON l.basis = c.basis AND l.month = c.month
ORDER BY c.basis, c.currency, abs(c.change) DESC, c.project, c.meter_name;
