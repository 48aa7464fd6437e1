-- rate_card_check: was each meter valued at the rate card price?
-- One row per meter × payment method × currency of the report month: the
-- quantity and usage value, the rate card price in force that month, the
-- expected value (quantity × price), the variance (usage value − expected)
-- and whether it is past the tolerance, and how much of the usage value is
-- invoiced (billed directly, or under an entitlement type Tally does not
-- know) or drawn from a prepaid balance: what a variance puts at stake.
-- License-covered value is in the usage value and nowhere billed. Meters
-- with no matching price are rows with status 'no price', never dropped.
--
-- The price in force and how a meter matches it are the rate_card_matches
-- view's; what keeps a meter from being valued at it and the expected
-- value are the macros rate_card_problem and rate_card_expected, as
-- rate_card_variance's.
--
-- Money math is DECIMAL: quantities are summed as DECIMAL(38,12) and the
-- expected cost is rounded to 12 decimals (so it must stay below 10^14 in
-- the card's currency). Percentages and unit prices are DOUBLE.
--
-- Parameters: $basis, $granularity, $month_start, $month_end (exclusive),
-- $tolerance (fraction, e.g. 0.005).
WITH billed AS (
    SELECT organization,
           CAST($month_start AS DATE) AS month,
           meter_name,
           nullif(meter_sku, '') AS meter_sku,
           nullif(payment_method, '') AS payment_method,
           currency,
           min(nullif(family, '')) AS family,
           min(nullif(solution, '')) AS solution,
           string_agg(DISTINCT nullif(unit, ''), ', ' ORDER BY nullif(unit, '')) AS unit,
           min(nullif(payment_method_name, '')) AS payment_method_name,
           count(*) AS rows,
           sum(CAST(quantity AS DECIMAL(38, 12))) AS quantity,
           sum(cost) AS cost,
           coalesce(sum(cost) FILTER (WHERE is_billed(paid_as)), 0) AS invoiced,
           coalesce(sum(cost) FILTER (WHERE paid_as = 'balance'), 0) AS from_balance
    FROM month_usage
    GROUP BY organization, meter_name, nullif(meter_sku, ''), nullif(payment_method, ''), currency
),
has_card AS (
    -- payment methods with base prices on a rate card: for them, a meter
    -- without a match is missing from the card, not the whole card
    SELECT DISTINCT organization, payment_method_id
    FROM rate_card_price_snapshots
    WHERE location_group IS NULL
),
checked AS (
    SELECT b.*,
           r.matched_by,
           r.prices AS distinct_prices,
           r.price_name,
           CASE WHEN r.price IS NOT NULL THEN r.price_unit END AS price_unit,
           r.currency AS card_currency,
           r.card_snapshot_at,
           h.payment_method_id IS NOT NULL AS has_card,
           r.price AS card_price,
           rate_card_problem(r.rule, r.price, r.currency, b.currency) AS problem
    FROM billed b
    LEFT JOIN rate_card_matches r
           ON r.organization = b.organization
          AND r.month = b.month
          AND r.payment_method_id = b.payment_method
          AND r.meter_name = b.meter_name
          AND coalesce(r.meter_sku, '') = coalesce(b.meter_sku, '')
    LEFT JOIN has_card h ON h.organization = b.organization AND h.payment_method_id = b.payment_method
),
expected AS (
    SELECT *,
           rate_card_expected(quantity, card_price, problem) AS expected_cost
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
       CAST(cost AS VARCHAR) AS usage_value,
       CASE WHEN quantity <> 0 THEN CAST(cost AS DOUBLE) / CAST(quantity AS DOUBLE) END AS unit_price,
       CAST(card_price AS VARCHAR) AS card_price,
       price_unit,
       price_name,
       matched_by,
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
       END AS status,
       CAST(invoiced AS VARCHAR) AS invoiced,
       CAST(from_balance AS VARCHAR) AS from_balance
FROM expected
ORDER BY meter_name, meter_sku NULLS FIRST, payment_method NULLS LAST, currency;
