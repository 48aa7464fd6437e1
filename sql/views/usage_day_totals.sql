-- usage_day_totals: every usage row (every granularity and basis) summed
-- per basis, granularity, day of period_at, month of date and of
-- date_processed, day of date, project, payment method, meter, sku, unit,
-- family, currency and paid_as, with the day's month and the next: the rows and
-- quantity, the cost (exact, never summed across currencies), the least
-- non-empty payment method name, the first and last bucket start and the
-- cost of streaming rows. Rows whose
-- period_at is NULL (basis reported, not yet charged; the load accepts
-- none) count on no day and are left out.
-- The monthly views read it under usage_coverage's choice
-- (usage_finest_days).
--
-- In the database this view reads daily_usage_totals, the same rows kept
-- by every load, so a condition on month or day is one on a stored
-- column, which DuckDB takes to the scan. The workbook and the export,
-- which inline the views, use this definition instead.
CREATE OR REPLACE VIEW usage_day_totals AS
SELECT organization, -- the organization (organizations.name)
       basis,
       granularity,
       CAST(date_trunc('month', period_at) AS DATE) AS month, -- the first day of day's month
       CAST(date_trunc('month', period_at) + INTERVAL 1 MONTH AS DATE) AS next_month, -- the first day of the month after
       CAST(period_at AS DATE) AS day, -- the UTC day of period_at
       CAST(date_trunc('month', date) AS DATE) AS date_month, -- the first day of date's month
       CAST(date_trunc('month', date_processed) AS DATE) AS processed_month, -- the first day of date_processed's month; NULL until charged
       project,
       payment_method,
       meter_name,
       meter_sku,
       currency,
       paid_as,
       min(nullif(payment_method_name, '')) AS payment_method_name, -- the least non-empty name; NULL when none
       count(*) AS rows, -- usage rows summed
       sum(CAST(quantity AS DECIMAL(38, 12))) AS quantity, -- each row's quantity as DECIMAL(38, 12), summed
       sum(cost) AS cost, -- exact; NULL when every row's is
       CAST(date AS DATE) AS date_day, -- the UTC day of date; day for basis usage
       unit,
       family,
       min(date) AS first_at, -- the earliest bucket start
       max(date) AS last_at, -- the latest bucket start
       sum(cost) FILTER (WHERE lower(solution) = 'streaming') AS streaming_cost -- the cost of streaming rows; NULL when none
FROM usage_rows
WHERE period_at IS NOT NULL
GROUP BY ALL;
