-- meter_skus: the sku the interface's usage rows give each meter name
-- (the smallest, when it gave several). The per-project usage report
-- names meters without skus; the estimate (usage.source projects) takes
-- a meter's sku from here, where the organization's report was ever
-- loaded, so the rate card's first rule (by sku) can price it.
--
-- In the database this view reads daily_usage_totals (every loaded row's
-- meter and sku, by day), not the usage rows.
CREATE OR REPLACE VIEW meter_skus AS
SELECT meter_name, min(meter_sku) AS meter_sku
FROM usage
WHERE basis <> 'estimated' AND nullif(meter_sku, '') IS NOT NULL
GROUP BY meter_name;
