-- by_meter: how much of each meter the report month used and what it is
-- worth, per currency. Quantities are summed as DECIMAL(38,12) so the sum
-- does not depend on the order rows are added in (a DOUBLE sum can differ in
-- its last digits from one run to the next).
--
-- Parameters: $basis, $granularity, $month_start, $month_end (exclusive).
SELECT nullif(family, '') AS family,
       nullif(solution, '') AS solution,
       meter_name,
       nullif(meter_sku, '') AS meter_sku,
       nullif(unit, '') AS unit,
       currency,
       count(*) AS rows,
       CAST(sum(CAST(quantity AS DECIMAL(38, 12))) AS DOUBLE) AS quantity,
       CAST(sum(cost) AS VARCHAR) AS cost
FROM month_usage
GROUP BY ALL
ORDER BY family NULLS LAST, solution NULLS LAST, meter_name, meter_sku NULLS LAST, unit NULLS LAST, currency;
