-- cost_by_meter_day: what each meter cost per UTC day, per currency and
-- basis (never summed across currencies or bases), from the finest
-- granularity loaded that is no coarser than a day.
SELECT basis,
       date_trunc('day', date)::DATE AS day,
       meter_name,
       unit,
       currency,
       sum(quantity) AS quantity,
       sum(cost) AS cost,
       count(*) AS rows
FROM usage
WHERE granularity = (
    SELECT CASE WHEN bool_or(granularity = 'hour') THEN 'hour' ELSE 'day' END
    FROM usage
    WHERE granularity IN ('hour', 'day')
)
GROUP BY ALL
ORDER BY basis, day, meter_name, unit, currency;
