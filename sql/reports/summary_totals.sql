-- summary_totals: for the report month, what the usage is worth per currency
-- and how it is paid: billed directly (no entitlement), drawn from a balance
-- (cash, quantity or pre-commitment entitlements), covered by a license, or
-- under an entitlement type Tally does not know. One row per currency; never
-- a total across currencies. Money is summed as DECIMAL and returned as text
-- so no float ever touches it.
--
-- How a row is paid is usage_rows' paid_as, split in month_paid.
--
-- Parameters: $basis, $granularity, $month_start, $month_end (exclusive).
SELECT currency,
       CAST(sum(rows) AS BIGINT) AS rows,
       CAST(sum(direct) AS VARCHAR) AS direct,
       CAST(sum(balance) AS VARCHAR) AS balance,
       CAST(sum(license) AS VARCHAR) AS license,
       CAST(sum(other) AS VARCHAR) AS other,
       CAST(sum(total) AS VARCHAR) AS total
FROM month_paid
GROUP BY currency
ORDER BY currency;
