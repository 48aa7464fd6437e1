-- statement_months: a cost centre's chargeback total per month and
-- currency over the twelve months before the report month, for its
-- statement's chart of its months (cost_centre_monthly_cost: the
-- chargeback of open months by the rules the last run recorded, of closed
-- months by those their close froze). The report month's own figure is
-- the statement's lines, not this query's.
--
-- Parameters: $org, $basis, $month_start, $centre.
SELECT strftime(month, '%Y-%m') AS month,
       currency,
       CAST(sum(total) AS VARCHAR) AS total
FROM cost_centre_monthly_cost
WHERE ($org IS NULL OR organization = $org)
  AND basis = $basis
  AND cost_centre = $centre
  AND month >= CAST($month_start AS DATE) - INTERVAL 12 MONTH
  AND month < CAST($month_start AS DATE)
GROUP BY ALL
ORDER BY currency, month
