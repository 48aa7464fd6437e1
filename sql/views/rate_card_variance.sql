-- rate_card_variance: did the interface bill each meter at its rate card
-- price? Per basis, calendar month (UTC), payment method, meter and
-- currency: the quantity and cost billed, the price in force, the expected
-- cost (quantity × price), the variance (billed − expected) and its share
-- of the expected cost. status is 'ok' (no variance), 'variance', or why
-- there is nothing to compare: 'no price', 'several prices' (the best rule
-- matches prices that differ), 'currency differs'. Meters without a price
-- are rows, never dropped.
--
-- The price in force is the payment method's rate card snapshot taken last
-- before the first of the next month, else its earliest; base prices only
-- (location_group NULL). A meter matches a price by meter_sku = sku, then
-- the meter name in parentheses in the price name, then name = meter_name;
-- the first rule that matches wins. Rows are those of the finest
-- granularity loaded for each basis. Quantities are summed as
-- DECIMAL(38,12) and the expected cost rounded to 12 decimals.
CREATE OR REPLACE VIEW rate_card_variance AS
WITH finest AS (
    SELECT basis,
           arg_min(granularity, CASE granularity WHEN 'hour' THEN 1 WHEN 'day' THEN 2 WHEN 'week' THEN 3 WHEN 'month' THEN 4 ELSE 5 END) AS granularity
    FROM usage
    GROUP BY basis
),
billed AS (
    SELECT u.basis,
           date_trunc('month', CASE WHEN u.basis = 'reported' THEN u.date_processed ELSE u.date END) AS month_start,
           coalesce(u.payment_method, '') AS payment_method,
           u.meter_name,
           coalesce(u.meter_sku, '') AS meter_sku,
           u.currency,
           min(nullif(u.payment_method_name, '')) AS payment_method_name,
           count(*) AS rows,
           sum(CAST(u.quantity AS DECIMAL(38, 12))) AS quantity,
           sum(u.cost) AS cost
    FROM usage u
    JOIN finest f ON f.basis = u.basis AND f.granularity = u.granularity
    GROUP BY ALL
),
months AS (
    SELECT DISTINCT month_start FROM billed
),
card_in_force AS (
    SELECT m.month_start,
           s.payment_method_id,
           coalesce(max(s.snapshot_at) FILTER (WHERE s.snapshot_at < m.month_start + INTERVAL 1 MONTH),
                    min(s.snapshot_at)) AS snapshot_at
    FROM months m
    CROSS JOIN (SELECT DISTINCT payment_method_id, snapshot_at FROM rate_card_price_snapshots) s
    GROUP BY m.month_start, s.payment_method_id
),
candidates AS (
    SELECT b.basis, b.month_start, b.payment_method, b.meter_name, b.meter_sku, b.currency,
           p.price,
           p.currency AS card_currency,
           CASE
               WHEN b.meter_sku <> '' AND p.sku = b.meter_sku THEN 1
               WHEN contains(p.name, '(' || b.meter_name || ')') THEN 2
               WHEN p.name = b.meter_name THEN 3
           END AS rule
    FROM billed b
    JOIN card_in_force c ON c.month_start = b.month_start AND c.payment_method_id = b.payment_method
    JOIN rate_card_price_snapshots p ON p.payment_method_id = c.payment_method_id AND p.snapshot_at = c.snapshot_at
    WHERE p.location_group IS NULL
),
best AS (
    SELECT *
    FROM candidates
    WHERE rule IS NOT NULL
    QUALIFY rule = min(rule) OVER (PARTITION BY basis, month_start, payment_method, meter_name, meter_sku, currency)
),
chosen AS (
    SELECT basis, month_start, payment_method, meter_name, meter_sku, currency,
           min(rule) AS rule,
           count(DISTINCT price) AS prices,
           count(DISTINCT coalesce(card_currency, '')) AS card_currencies,
           min(price) AS price,
           min(card_currency) AS card_currency
    FROM best
    GROUP BY ALL
),
checked AS (
    SELECT b.*,
           c.rule,
           CASE
               WHEN c.rule IS NULL THEN 'no price'
               WHEN c.prices > 1 OR c.card_currencies > 1 THEN 'several prices'
               WHEN c.card_currency IS NOT NULL AND c.card_currency <> b.currency THEN 'currency differs'
           END AS problem,
           c.price AS card_price
    FROM billed b
    LEFT JOIN chosen c USING (basis, month_start, payment_method, meter_name, meter_sku, currency)
),
expected AS (
    SELECT *,
           CASE WHEN problem IS NULL THEN CAST(quantity * card_price AS DECIMAL(38, 12)) END AS expected_cost
    FROM checked
)
SELECT basis,
       CAST(month_start AS DATE) AS month,
       nullif(payment_method, '') AS payment_method,
       payment_method_name,
       meter_name,
       nullif(meter_sku, '') AS meter_sku,
       currency,
       rows,
       quantity,
       cost,
       CASE WHEN problem IS NULL THEN card_price END AS card_price,
       CASE rule WHEN 1 THEN 'sku' WHEN 2 THEN 'meter name in parentheses' WHEN 3 THEN 'name' END AS matched_by,
       expected_cost,
       cost - expected_cost AS variance,
       CASE WHEN expected_cost <> 0 THEN CAST(cost - expected_cost AS DOUBLE) / CAST(expected_cost AS DOUBLE) END AS variance_pct,
       coalesce(problem, CASE WHEN cost = expected_cost THEN 'ok' ELSE 'variance' END) AS status
FROM expected;
