-- month_close_keys: what a closed month's frozen and Correction rows in
-- the focus view carry besides their figures, at their grain
-- (organization, closed month, basis, granularity, project, meter, payment
-- method, currency), as the month's usage rows carry it: the sku, family,
-- solution, unit and payment method name of the month's usage keys (the
-- smallest, should a key differ), the rate card price those rows matched
-- in their currency, and the project's snapshot in force, each key of its
-- own month of date, as the usage rows have them (a reported row of a
-- closed month may have happened the month before). From the closed
-- months' keys, not their rows. The store keeps the result in the table
-- of this name, for the closes a condition on these columns picks.
SELECT c.organization, c.month, c.basis, c.granularity,
       coalesce(ky.project, '') AS project, ky.meter_name, coalesce(ky.payment_method, '') AS payment_method, ky.currency,
       min(nullif(ky.meter_sku, '')) AS meter_sku,
       min(nullif(ky.family, '')) AS family,
       min(nullif(ky.solution, '')) AS solution,
       min(nullif(ky.unit, '')) AS unit,
       min(nullif(ky.payment_method_name, '')) AS payment_method_name,
       min(pr.price_name) AS price_name,
       min(pr.price_unit) AS price_unit,
       max(pr.card_snapshot_at) AS card_snapshot_at,
       min(pr.price) AS card_price,
       min(project.display_name) AS project_display_name,
       min(project.location_name) AS location_name,
       min(project.location_display_name) AS location_display_name
FROM closed_months c
JOIN usage_keys ky
  ON ky.organization = c.organization AND ky.basis = c.basis AND ky.granularity = c.granularity
 AND ky.period_month >= c.month AND ky.period_month < c.month + INTERVAL 1 MONTH
LEFT JOIN rate_card_matches pr
       ON pr.price IS NOT NULL
      AND pr.organization = ky.organization AND CAST(pr.month AS TIMESTAMP) = ky.month AND pr.payment_method_id = coalesce(ky.payment_method, '')
      AND pr.meter_name = ky.meter_name AND coalesce(pr.meter_sku, '') = coalesce(ky.meter_sku, '') AND pr.currency = ky.currency
LEFT JOIN projects_by_month project
       ON project.organization = ky.organization AND CAST(project.month AS TIMESTAMP) = ky.month AND project.name = ky.project
GROUP BY ALL
