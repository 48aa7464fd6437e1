-- is_billed: whether the invoice charges a row paid as paid_as (usage_rows'
-- paid_as, paid_as_of's): billed directly or under an entitlement type
-- Tally does not know; not covered by a license nor drawn from a prepaid
-- balance. What FOCUS calls BilledCost, and the workbook invoiced. The one
-- place this rule lives: the views, report queries and close figures that
-- split a cost by it call this.
CREATE OR REPLACE MACRO is_billed(paid_as) AS
    paid_as IN ('direct', 'other');
