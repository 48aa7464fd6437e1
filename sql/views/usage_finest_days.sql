-- usage_finest_days: usage_day_totals of the granularity usage_coverage
-- chooses for each basis and day: usage_finest summed per day and key,
-- what the monthly views (project_monthly_cost, cost_month_over_month,
-- rate_card_variance, entitlement_coverage) sum. Its month is a stored
-- column in the database (daily_usage_totals), so a condition on it
-- reaches the table's scan through these views.
CREATE OR REPLACE VIEW usage_finest_days AS
SELECT t.*
FROM usage_day_totals t
SEMI JOIN usage_coverage c
    ON c.organization = t.organization AND c.basis = t.basis AND c.granularity = t.granularity AND c.day = t.day;
