-- usage_finest: the usage_rows of the finest granularity loaded for each
-- basis (hour, then day, week, month, year), so that a charge loaded at
-- two granularities counts once. The analyst views that sum usage read
-- it.
CREATE OR REPLACE VIEW usage_finest AS
WITH finest AS (
    SELECT basis,
           arg_min(granularity, CASE granularity WHEN 'hour' THEN 1 WHEN 'day' THEN 2 WHEN 'week' THEN 3 WHEN 'month' THEN 4 ELSE 5 END) AS granularity
    FROM usage
    GROUP BY basis
)
SELECT u.*
FROM usage_rows u
JOIN finest f ON f.basis = u.basis AND f.granularity = u.granularity;
