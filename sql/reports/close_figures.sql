-- close_figures: the report month's usage value per project, meter,
-- payment method and currency, as month_close_figures keeps it when the
-- month is closed: the usage value, what is invoiced (not covered by a
-- license nor drawn from a prepaid balance, as FOCUS BilledCost) and what
-- is not covered by a license (FOCUS EffectiveCost). Money is returned as
-- text so no float touches it.
--
-- Parameters: $basis, $granularity, $month_start, $month_end (exclusive).
SELECT organization,
       project,
       meter_name,
       payment_method,
       currency,
       count(*) AS rows,
       CAST(sum(cost) AS VARCHAR) AS cost,
       CAST(sum(CASE WHEN is_billed(paid_as) THEN cost ELSE 0 END) AS VARCHAR) AS billed,
       CAST(sum(CASE WHEN is_effective(paid_as) THEN cost ELSE 0 END) AS VARCHAR) AS effective,
       CAST(sum(CAST(quantity AS DECIMAL(38, 12))) AS VARCHAR) AS quantity,
       min(nullif(unit, '')) AS unit
FROM month_usage
GROUP BY ALL
ORDER BY ALL;
