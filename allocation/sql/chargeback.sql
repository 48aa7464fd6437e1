-- chargeback: the report month's chargeback, line by line, for the
-- Chargeback sheet and the cost centres' statements: cost_allocation over
-- the report month's rows (allocation/lines.go puts month_usage in place
-- of usage_finest, and the config's allocation in place of the one the
-- store holds for open months). Charges of one project, meter, paid-as and
-- rule entry are one line (their families and payment methods together).
-- Money is returned as text so no float touches it.
--
-- Parameters: $basis, $granularity, $month_start, $month_end (exclusive).
SELECT cost_centre,
       currency,
       cost_centre = 'Unallocated' AS unallocated,
       coalesce(origin_project, '') AS origin_project,
       origin_meter,
       paid_as,
       method,
       coalesce(rule_version, '') AS rule_version,
       CAST(ratio AS VARCHAR) AS ratio,
       CAST(sum(amount) AS VARCHAR) AS amount,
       coalesce(note, '') AS note
FROM cost_allocation
GROUP BY 1, 2, 3, 4, 5, 6, 7, 8, 9, 11
ORDER BY 3, 1, 2, 8, 4, 5, 6, 7;
