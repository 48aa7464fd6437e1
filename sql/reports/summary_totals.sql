-- summary_totals: for the report month, what the usage is worth per currency
-- and how it is paid: billed directly (no entitlement), drawn from a balance
-- (cash, quantity or pre-commitment entitlements), covered by a license, or
-- under an entitlement type Tally does not know. One row per currency; never
-- a total across currencies. Money is summed as DECIMAL and returned as text
-- so no float ever touches it.
--
-- How a row is paid is usage_rows' paid_as.
--
-- Parameters: $basis, $granularity, $month_start, $month_end (exclusive).
SELECT currency,
       count(*) AS rows,
       CAST(coalesce(sum(cost) FILTER (WHERE paid_as = 'direct'), 0) AS VARCHAR) AS direct,
       CAST(coalesce(sum(cost) FILTER (WHERE paid_as = 'balance'), 0) AS VARCHAR) AS balance,
       CAST(coalesce(sum(cost) FILTER (WHERE paid_as = 'license'), 0) AS VARCHAR) AS license,
       CAST(coalesce(sum(cost) FILTER (WHERE paid_as = 'other'), 0) AS VARCHAR) AS other,
       CAST(sum(cost) AS VARCHAR) AS total
FROM month_usage
GROUP BY currency
ORDER BY currency;
