-- meter_daily_cost: what each meter cost per UTC day, per basis, unit and
-- currency, with the quantity used. Never summed across currencies or
-- bases.
--
-- Rows are those of the finest granularity loaded for each basis that is
-- no coarser than a day (a week or month bucket cannot be split into
-- days). The day is that of date for basis usage and of date_processed for
-- basis reported.
CREATE OR REPLACE VIEW meter_daily_cost AS
WITH finest AS (
    SELECT organization,
           basis,
           arg_min(granularity, CASE granularity WHEN 'hour' THEN 1 ELSE 2 END) AS granularity
    FROM usage
    WHERE granularity IN ('hour', 'day')
    GROUP BY organization, basis
),
u AS (
    SELECT u.*,
           CASE WHEN u.basis = 'reported' THEN u.date_processed ELSE u.date END AS period_at
    FROM usage u
    JOIN finest f ON f.organization = u.organization AND f.basis = u.basis AND f.granularity = u.granularity
)
SELECT organization,
       basis,
       granularity,
       CAST(period_at AS DATE) AS day,
       meter_name,
       unit,
       currency,
       count(*) AS rows,
       sum(quantity) AS quantity,
       sum(cost) AS cost
FROM u
GROUP BY organization, basis, granularity, CAST(period_at AS DATE), meter_name, unit, currency;
