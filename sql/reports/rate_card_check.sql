-- rate_card_check: did the interface bill each meter at the rate card price?
-- One row per meter × payment method × currency of the report month: the
-- billed quantity and cost, the rate card price in force that month, the
-- expected cost (quantity × price), the variance (billed − expected) and
-- whether it is past the tolerance. Meters with no matching price are rows
-- with status 'no price', never dropped.
--
-- The price in force is the payment method's rate card snapshot taken last
-- before the first of the next month, else its earliest one; only base
-- prices (location_group NULL) are compared. A meter matches a price by, in
-- this order: meter_sku = sku; the meter name in parentheses in the price
-- name (advanced_sd(video_encoding_ondemand) for video_encoding_ondemand);
-- name = meter_name. The first rule that matches anything wins; when it
-- matches prices that differ, the row says 'several prices' rather than
-- pick one.
--
-- Money math is DECIMAL: quantities are summed as DECIMAL(38,12) and the
-- expected cost is rounded to 12 decimals (so it must stay below 10^14 in
-- the card's currency). Percentages and unit prices are DOUBLE.
--
-- Parameters: $basis, $granularity, $month_start, $month_end (exclusive),
-- $tolerance (fraction, e.g. 0.005).
WITH m AS (
    SELECT *
    FROM usage
    WHERE basis = $basis
      AND granularity = $granularity
      AND (($basis = 'usage' AND date >= $month_start AND date < $month_end)
        OR ($basis = 'reported' AND date_processed >= $month_start AND date_processed < $month_end))
),
billed AS (
    SELECT row_number() OVER (ORDER BY meter_name, meter_sku NULLS FIRST, payment_method NULLS LAST, currency) AS k,
           *
    FROM (
        SELECT meter_name,
               nullif(meter_sku, '') AS meter_sku,
               nullif(payment_method, '') AS payment_method,
               currency,
               min(nullif(family, '')) AS family,
               min(nullif(solution, '')) AS solution,
               string_agg(DISTINCT nullif(unit, ''), ', ' ORDER BY nullif(unit, '')) AS unit,
               min(nullif(payment_method_name, '')) AS payment_method_name,
               count(*) AS rows,
               sum(CAST(quantity AS DECIMAL(38, 12))) AS quantity,
               sum(cost) AS cost
        FROM m
        GROUP BY meter_name, nullif(meter_sku, ''), nullif(payment_method, ''), currency
    )
),
card_in_force AS (
    SELECT payment_method_id,
           coalesce(max(snapshot_at) FILTER (WHERE snapshot_at < $month_end), min(snapshot_at)) AS snapshot_at
    FROM rate_card_price_snapshots
    GROUP BY payment_method_id
),
prices AS (
    SELECT r.*
    FROM rate_card_price_snapshots r
    JOIN card_in_force c ON c.payment_method_id = r.payment_method_id AND c.snapshot_at = r.snapshot_at
    WHERE r.location_group IS NULL
),
candidates AS (
    SELECT b.k,
           p.price,
           p.name,
           p.sku,
           p.unit,
           p.currency,
           p.snapshot_at,
           CASE
               WHEN b.meter_sku IS NOT NULL AND p.sku = b.meter_sku THEN 1
               WHEN contains(p.name, '(' || b.meter_name || ')') THEN 2
               WHEN p.name = b.meter_name THEN 3
           END AS rule
    FROM billed b
    JOIN prices p ON p.payment_method_id = b.payment_method
),
best AS (
    SELECT *
    FROM candidates
    WHERE rule IS NOT NULL
    QUALIFY rule = min(rule) OVER (PARTITION BY k)
),
chosen AS (
    SELECT k,
           min(rule) AS rule,
           count(DISTINCT price) AS distinct_prices,
           count(DISTINCT coalesce(currency, '')) AS distinct_currencies,
           min(price) AS price,
           min(currency) AS card_currency,
           string_agg(DISTINCT name, ', ' ORDER BY name) AS price_name,
           string_agg(DISTINCT unit, ', ' ORDER BY unit) AS price_unit,
           min(snapshot_at) AS snapshot_at
    FROM best
    GROUP BY k
),
has_card AS (
    SELECT DISTINCT payment_method_id FROM prices
),
checked AS (
    SELECT b.*,
           c.rule,
           c.distinct_prices,
           c.price_name,
           c.price_unit,
           c.card_currency,
           c.snapshot_at AS card_snapshot_at,
           h.payment_method_id IS NOT NULL AS has_card,
           CASE
               WHEN c.k IS NULL THEN NULL
               WHEN c.distinct_prices > 1 OR c.distinct_currencies > 1 THEN NULL
               ELSE c.price
           END AS card_price,
           CASE
               WHEN c.k IS NULL THEN 'no price'
               WHEN c.distinct_prices > 1 OR c.distinct_currencies > 1 THEN 'several prices'
               WHEN c.card_currency IS NOT NULL AND c.card_currency <> b.currency THEN 'currency differs'
           END AS problem
    FROM billed b
    LEFT JOIN chosen c ON c.k = b.k
    LEFT JOIN has_card h ON h.payment_method_id = b.payment_method
),
expected AS (
    SELECT *,
           CASE WHEN problem IS NULL THEN CAST(quantity * card_price AS DECIMAL(38, 12)) END AS expected_cost
    FROM checked
)
SELECT meter_name,
       meter_sku,
       family,
       solution,
       payment_method,
       payment_method_name,
       currency,
       rows,
       CAST(quantity AS DOUBLE) AS quantity,
       unit,
       CAST(cost AS VARCHAR) AS billed_cost,
       CASE WHEN quantity <> 0 THEN CAST(cost AS DOUBLE) / CAST(quantity AS DOUBLE) END AS billed_unit_price,
       CAST(card_price AS VARCHAR) AS card_price,
       CASE WHEN problem = 'several prices' THEN NULL ELSE price_unit END AS price_unit,
       price_name,
       CASE rule
           WHEN 1 THEN 'sku'
           WHEN 2 THEN 'meter name in parentheses'
           WHEN 3 THEN 'name'
       END AS matched_by,
       distinct_prices,
       card_currency,
       card_snapshot_at,
       has_card,
       CAST(expected_cost AS VARCHAR) AS expected_cost,
       CAST(cost - expected_cost AS VARCHAR) AS variance,
       CASE WHEN expected_cost <> 0 THEN CAST(cost - expected_cost AS DOUBLE) / CAST(expected_cost AS DOUBLE) END AS variance_pct,
       CASE
           WHEN problem IS NOT NULL THEN problem
           WHEN expected_cost = 0 AND cost <> 0 THEN 'variance'
           WHEN expected_cost <> 0 AND abs(CAST(cost - expected_cost AS DOUBLE) / CAST(expected_cost AS DOUBLE)) > $tolerance THEN 'variance'
           ELSE 'ok'
       END AS status
FROM expected
ORDER BY meter_name, meter_sku NULLS FIRST, payment_method NULLS LAST, currency;
