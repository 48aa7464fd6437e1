-- cost_centre_monthly_cost: per basis, month, currency and cost centre
-- (and Unallocated), chargeback's totals from cost_allocation: the direct
-- cost of the projects it owns, the shared cost it received, and their sum.
-- Per month and currency, the totals add up to the month's usage value.
-- Money is exact DECIMAL and is never added across currencies.
CREATE OR REPLACE VIEW cost_centre_monthly_cost AS
SELECT organization, -- the organization (organizations.name)
       basis, -- usage or reported
       month, -- first day of the month, UTC
       currency, -- ISO 4217 code
       cost_centre, -- the cost centre, or Unallocated
       coalesce(sum(amount) FILTER (WHERE rule IS NULL), 0) AS direct, -- its own projects' charges that no rule shares
       coalesce(sum(amount) FILTER (WHERE rule IS NOT NULL), 0) AS shared_received, -- its parts of shared charges
       sum(amount) AS total, -- direct + shared_received
       coalesce(sum(amount) FILTER (WHERE is_billed(paid_as)), 0) AS billed -- of the total, what the invoice charges (not covered by a license nor drawn from a balance)
FROM cost_allocation
GROUP BY ALL;
