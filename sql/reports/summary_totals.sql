-- summary_totals: for the report month, what the usage is worth per currency
-- and how it is paid: billed directly (no entitlement), drawn from a balance
-- (cash, quantity or pre-commitment entitlements), covered by a license, or
-- under an entitlement type Tally does not know. One row per currency; never
-- a total across currencies. Money is summed as DECIMAL and returned as text
-- so no float ever touches it.
--
-- How a row is paid is usage_rows' paid_as, split in month_paid and
-- summed in month_paid_by.
--
-- Parameters: $basis, $granularity, $month_start, $month_end (exclusive).
SELECT currency, * EXCLUDE (level, organization, project, currency)
FROM month_paid_by
WHERE level = 'currency'
ORDER BY currency;
