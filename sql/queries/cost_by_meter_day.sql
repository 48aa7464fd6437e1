-- cost_by_meter_day: what each meter cost per UTC day, per currency and
-- basis (never summed across currencies or bases), from the finest
-- granularity loaded that is no coarser than a day.
--
-- It sums the daily totals the load keeps (usage_day_totals, per day of
-- date and unit), not the usage rows; quantity is their exact sum given as
-- the nearest DOUBLE, as in meter_daily_cost.
SELECT basis,
       date_day AS day,
       meter_name,
       unit,
       currency,
       CAST(sum(quantity) AS DOUBLE) AS quantity,
       sum(cost) AS cost,
       CAST(sum(rows) AS BIGINT) AS rows
FROM usage_day_totals
WHERE granularity = (
    SELECT CASE WHEN bool_or(granularity = 'hour') THEN 'hour' ELSE 'day' END
    FROM usage_day_totals
    WHERE granularity IN ('hour', 'day')
)
GROUP BY ALL
ORDER BY basis, day, meter_name, unit, currency;
