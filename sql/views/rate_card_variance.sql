-- rate_card_variance: did the interface bill each meter at its rate card
-- price? Per basis, calendar month (UTC), payment method, meter and
-- currency: the quantity and cost billed, the price in force, the expected
-- cost (quantity × price), the variance (billed − expected) and its share
-- of the expected cost. status is 'ok' (no variance), 'variance', or why
-- there is nothing to compare: 'no price', 'several prices' (the best rule
-- matches prices that differ), 'currency differs'. Meters without a price
-- are rows, never dropped.
--
-- The price in force and how a meter matches it are rate_card_matches';
-- what keeps a meter from being valued at it (status) and the expected
-- cost are the macros rate_card_problem and rate_card_expected.
-- Rows are usage_finest's: the finest granularity loaded for each basis,
-- summed from their daily totals (usage_finest_days), whose month is
-- stored: WHERE month = … reads that month's usage only (the prices are
-- matched in rate_card_matches, for the months meter_months gives).
-- Quantities are summed as DECIMAL(38,12) and the expected cost rounded to
-- 12 decimals.
CREATE OR REPLACE VIEW rate_card_variance AS
WITH billed AS (
    SELECT u.organization,
           u.basis,
           u.month,
           coalesce(u.payment_method, '') AS payment_method,
           u.meter_name,
           coalesce(u.meter_sku, '') AS meter_sku,
           u.currency,
           min(u.payment_method_name) AS payment_method_name,
           CAST(sum(u.rows) AS BIGINT) AS rows,
           sum(u.quantity) AS quantity,
           sum(u.cost) AS cost
    FROM usage_finest_days u
    GROUP BY u.organization, u.basis, u.month, coalesce(u.payment_method, ''), u.meter_name, coalesce(u.meter_sku, ''), u.currency
),
checked AS (
    SELECT b.*,
           r.matched_by,
           rate_card_problem(r.rule, r.price, r.currency, b.currency) AS problem,
           r.price AS card_price
    FROM billed b
    LEFT JOIN rate_card_matches r
           ON r.organization = b.organization
          AND r.month = b.month
          AND r.payment_method_id = b.payment_method
          AND r.meter_name = b.meter_name
          AND coalesce(r.meter_sku, '') = b.meter_sku
),
expected AS (
    SELECT *,
           rate_card_expected(quantity, card_price, problem) AS expected_cost
    FROM checked
)
SELECT organization, -- the organization (organizations.name)
       basis,
       month,
       nullif(payment_method, '') AS payment_method,
       payment_method_name,
       meter_name,
       nullif(meter_sku, '') AS meter_sku,
       currency,
       rows,
       quantity,
       cost,
       CASE WHEN problem IS NULL THEN card_price END AS card_price,
       matched_by,
       expected_cost,
       cost - expected_cost AS variance,
       CASE WHEN expected_cost <> 0 THEN CAST(cost - expected_cost AS DOUBLE) / CAST(expected_cost AS DOUBLE) END AS variance_pct,
       coalesce(problem, CASE WHEN cost = expected_cost THEN 'ok' ELSE 'variance' END) AS status
FROM expected;
