-- commitments: backs the Commitments sheet (and the commitment alert):
-- per commitment of the config ($commitments, a JSON list of
-- {i, entitlement, category, currency, unit, first_day, last_day} that
-- store.CommitmentDraws writes), what the usage rows of the report's basis
-- and granularity drew from it: this month, and to date (from its first
-- day through the report month's end, as loaded). The draws to date reach
-- back to the commitment's start, so they read usage_rows; month_usage,
-- the report month's rows, only says how far the month's pace runs.
--
-- What a row draws is the macros' (commitment_category, commitment_draw),
-- the same as focus's CommitmentDiscountQuantity, which FOCUS 1.3's
-- Contract Commitment sums: a Spend commitment draws the cost of its
-- entitlement's rows in its currency, a Usage one the quantity of those in
-- its unit (compared in FOCUS unit format, focus_unit). The entitlement's
-- other rows in the period (another currency or unit, the other category,
-- a type Tally does not know) are not added, only counted (rows_apart).
--
-- last_at is the month's last usage bucket of any row (NULL: none): the
-- month's pace runs through its day.
--
-- Parameters: $basis, $granularity, $org (NULL for every organization),
-- $month_start, $month_end (exclusive), $commitments.
WITH c AS (
    SELECT x.i, x.entitlement, x.category, x.currency,
           focus_unit(coalesce(x.unit, '')) AS unit,
           CAST(x.first_day AS TIMESTAMP) AS from_at,
           CAST(x.last_day AS TIMESTAMP) + INTERVAL 1 DAY AS until_at
    FROM (SELECT unnest(from_json(CAST($commitments AS VARCHAR),
            '[{"i":"INTEGER","entitlement":"VARCHAR","category":"VARCHAR","currency":"VARCHAR","unit":"VARCHAR","first_day":"DATE","last_day":"DATE"}]'),
            recursive := true)) x
),
last_row AS (
    SELECT max(period_at) AS last_at FROM month_usage
),
u AS (
    SELECT entitlement, period_at, currency,
           focus_unit(coalesce(unit, '')) AS unit,
           commitment_category(entitlement_type, entitlement) AS category,
           cost, quantity
    FROM usage_rows
    WHERE ($org IS NULL OR organization = $org)
      AND basis = $basis
      AND granularity = $granularity
      AND entitlement IN (SELECT entitlement FROM c)
      AND period_at < CAST($month_end AS TIMESTAMP)
),
j AS (
    SELECT c.i, u.period_at, u.entitlement IS NOT NULL AS found,
           coalesce(u.category = c.category
                    AND CASE c.category WHEN 'Spend' THEN u.currency = c.currency ELSE u.unit = c.unit END, false) AS counted,
           commitment_draw(u.category, u.cost, u.quantity) AS drawn
    FROM c
    LEFT JOIN u ON u.entitlement = c.entitlement AND u.period_at >= c.from_at AND u.period_at < c.until_at
)
SELECT i,
       CAST(coalesce(sum(drawn) FILTER (WHERE counted AND period_at >= CAST($month_start AS TIMESTAMP)), 0) AS VARCHAR) AS drawn_month,
       CAST(coalesce(sum(drawn) FILTER (WHERE counted), 0) AS VARCHAR) AS drawn_to_date,
       count(*) FILTER (WHERE found AND NOT counted) AS rows_apart,
       (SELECT last_at FROM last_row) AS last_at
FROM j
GROUP BY i
ORDER BY i
