-- rate_card_matches: which rate card price each meter matched, per calendar
-- month (UTC), payment method, meter name and sku seen in the usage: the
-- card in force that month, the rule that matched, and the price, or NULL
-- with how many prices and currencies matched when they differ. Meters
-- that match nothing have no row.
--
-- This is the one place the matching rule lives: rate_card_variance, focus
-- and the workbook's rate card check (sql/reports/rate_card_check.sql) all
-- read it.
--
-- The card in force for a month is snapshots_in_force's; only base prices
-- (location_group NULL) are compared. A meter matches a price by, in this
-- order: meter_sku = sku; the meter name in parentheses in the price name
-- (advanced_sd(video_encoding_ondemand) for video_encoding_ondemand);
-- name = meter_name. The first rule that matches anything wins; when it
-- matches prices that differ, or prices in different currencies, price is
-- NULL rather than one picked.
--
-- A month is a month of date or of date_processed, so that both bases
-- (when used, when charged) find their month here.
CREATE OR REPLACE VIEW rate_card_matches AS
WITH meters AS (
    SELECT organization, month, payment_method, meter_name, sku_key
    FROM meter_months
    WHERE nullif(payment_method, '') IS NOT NULL
    UNION
    -- The per-project report's meters, priced before they are usage rows
    -- (basis estimated): the payment method the project was assigned.
    SELECT DISTINCT d.organization, d.month, p.assigned_payment_method_id, d.meter_name, coalesce(k.meter_sku, '')
    FROM project_usage_days d
    JOIN snapshots_in_force c ON c.kind = 'project' AND c.organization = d.organization AND c.month = d.month AND c.key = d.project
    JOIN project_snapshots p ON p.organization = d.organization AND p.name = d.project AND p.snapshot_at = c.snapshot_at
    LEFT JOIN meter_skus k ON k.meter_name = d.meter_name
    WHERE nullif(p.assigned_payment_method_id, '') IS NOT NULL
),
candidates AS (
    SELECT m.organization, m.month, m.payment_method, m.meter_name, m.sku_key,
           p.snapshot_at, p.price, p.currency, p.name, p.display_name, nullif(p.unit, '') AS unit,
           CASE
               WHEN m.sku_key <> '' AND p.sku = m.sku_key THEN 1
               WHEN contains(p.name, '(' || m.meter_name || ')') THEN 2
               WHEN p.name = m.meter_name THEN 3
           END AS rule
    FROM meters m
    JOIN snapshots_in_force c ON c.kind = 'rate_card' AND c.organization = m.organization AND c.month = m.month AND c.key = m.payment_method
    JOIN rate_card_price_snapshots p ON p.organization = c.organization AND p.payment_method_id = c.key AND p.snapshot_at = c.snapshot_at
    WHERE p.location_group IS NULL
),
best AS (
    SELECT *
    FROM candidates
    WHERE rule IS NOT NULL
    QUALIFY rule = min(rule) OVER (PARTITION BY organization, month, payment_method, meter_name, sku_key)
)
SELECT organization,
       month,
       payment_method AS payment_method_id,
       meter_name,
       nullif(sku_key, '') AS meter_sku,
       min(snapshot_at) AS card_snapshot_at,
       min(rule) AS rule,
       CASE min(rule) WHEN 1 THEN 'sku' WHEN 2 THEN 'meter name in parentheses' ELSE 'name' END AS matched_by,
       count(DISTINCT price) AS prices,
       count(DISTINCT coalesce(currency, '')) AS currencies,
       CASE WHEN count(DISTINCT price) = 1 AND count(DISTINCT coalesce(currency, '')) = 1 THEN min(price) END AS price,
       CASE WHEN count(DISTINCT coalesce(currency, '')) = 1 THEN min(currency) END AS currency,
       string_agg(DISTINCT name, ', ' ORDER BY name) AS price_name,
       string_agg(DISTINCT display_name, ', ' ORDER BY display_name) AS price_display_name,
       string_agg(DISTINCT unit, ', ' ORDER BY unit) AS price_unit
FROM best
GROUP BY organization, month, payment_method, meter_name, sku_key;
