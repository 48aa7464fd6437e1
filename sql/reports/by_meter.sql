-- by_meter: how much of each meter the report month used and what it is
-- worth, per currency. Quantities are summed as DECIMAL(38,12) so the sum
-- does not depend on the order rows are added in (a DOUBLE sum can differ in
-- its last digits from one run to the next).
--
-- Parameters: $basis, $granularity, $month_start, $month_end (exclusive).
WITH m AS (
    SELECT *
    FROM usage
    WHERE basis = $basis
      AND granularity = $granularity
      AND (($basis = 'usage' AND date >= $month_start AND date < $month_end)
        OR ($basis = 'reported' AND date_processed >= $month_start AND date_processed < $month_end))
)
SELECT nullif(family, '') AS family,
       nullif(solution, '') AS solution,
       meter_name,
       nullif(meter_sku, '') AS meter_sku,
       nullif(unit, '') AS unit,
       currency,
       count(*) AS rows,
       CAST(sum(CAST(quantity AS DECIMAL(38, 12))) AS DOUBLE) AS quantity,
       CAST(sum(cost) AS VARCHAR) AS cost
FROM m
GROUP BY ALL
ORDER BY family NULLS LAST, solution NULLS LAST, meter_name, meter_sku NULLS LAST, unit NULLS LAST, currency;
