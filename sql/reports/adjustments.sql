-- adjustments: the "Adjustments to closed months" sheet: every difference
-- between a closed month's figures at close and today's
-- (closed_month_adjustments), of the report's basis and granularity, per
-- closed month, project, meter, payment method and currency. A workbook
-- shows every closed month's difference that is not zero when it is
-- written, whichever month it reports. Money is returned as text.
--
-- Parameters: $basis, $granularity.
SELECT strftime(month, '%Y-%m') AS month,
       strftime(closed_at, '%Y-%m-%d %H:%M') AS closed_at,
       coalesce(project, '') AS project,
       meter_name,
       coalesce(payment_method, '') AS payment_method,
       currency,
       CAST(closed_cost AS VARCHAR) AS closed_cost,
       CAST(today_cost AS VARCHAR) AS today_cost,
       CAST(difference AS VARCHAR) AS difference
FROM closed_month_adjustments
WHERE ($org IS NULL OR organization = $org)
  AND basis = $basis
  AND granularity = $granularity
  AND difference <> 0
ORDER BY month, currency, project, meter_name, payment_method;
