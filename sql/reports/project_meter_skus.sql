-- project_meter_skus: the meter_skus view's rows for the meters the
-- per-project report names (project_usage_days), in its place in the
-- rate card check: rate_card_matches looks up no other meter's sku. A
-- meter's sku is the least of all its rows, so it reads the rows of
-- those meters in every month; with no per-project report it reads none,
-- where meter_skus read every usage row of the history.
SELECT meter_name, min(meter_sku) AS meter_sku
FROM usage u
SEMI JOIN (SELECT DISTINCT meter_name FROM project_usage_days) d USING (meter_name)
WHERE basis <> 'estimated' AND nullif(meter_sku, '') IS NOT NULL
GROUP BY meter_name
