-- meter_daily_cost: what each meter cost per UTC day, per basis, unit and
-- currency, with the quantity used. Never summed across currencies or
-- bases.
--
-- Rows are those of the finest granularity loaded for each basis that is
-- no coarser than a day (a week or month bucket cannot be split into
-- days). The day is that of date for basis usage and of date_processed for
-- basis reported.
--
-- It sums the daily totals the load keeps (usage_day_totals, per day of
-- period_at and unit), not the rows. quantity is the exact sum of the
-- rows' quantities, each as DECIMAL(38, 12), given as the nearest DOUBLE:
-- the same whatever order the rows are added in (a sum of DOUBLEs, as
-- before, differed in its last digits with that order).
CREATE OR REPLACE VIEW meter_daily_cost AS
WITH finest AS (
    SELECT organization,
           basis,
           arg_min(granularity, CASE granularity WHEN 'hour' THEN 1 ELSE 2 END) AS granularity
    FROM usage_day_totals
    WHERE granularity IN ('hour', 'day')
    GROUP BY organization, basis
)
SELECT t.organization,
       t.basis,
       t.granularity,
       t.day,
       t.meter_name,
       t.unit,
       t.currency,
       CAST(sum(t.rows) AS BIGINT) AS rows,
       CAST(sum(t.quantity) AS DOUBLE) AS quantity,
       sum(t.cost) AS cost
FROM usage_day_totals t
JOIN finest f ON f.organization = t.organization AND f.basis = t.basis AND f.granularity = t.granularity
GROUP BY t.organization, t.basis, t.granularity, t.day, t.meter_name, t.unit, t.currency;
