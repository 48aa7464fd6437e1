-- entitlement_coverage_by_month: per month and currency, how the usage
-- value is paid (billed directly, drawn from a prepaid balance, covered by
-- a license, other entitlement types) and the share entitlements cover,
-- from the entitlement_coverage view summed over projects and meters.
SELECT basis,
       month,
       currency,
       sum(rows) AS rows,
       sum(cost) AS cost,
       sum(billed_directly) AS billed_directly,
       sum(from_balance) AS from_balance,
       sum(license_covered) AS license_covered,
       sum(other_entitlement) AS other_entitlement,
       CASE WHEN sum(cost) <> 0
            THEN round(100 * CAST(sum(from_balance) + sum(license_covered) AS DOUBLE) / CAST(sum(cost) AS DOUBLE), 2)
       END AS covered_percent
FROM entitlement_coverage
GROUP BY basis, month, currency
ORDER BY basis, month, currency;
