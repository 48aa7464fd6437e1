-- payment_methods_by_month: each payment method as it stood in each
-- calendar month (UTC) the usage covers, by date or by date_processed: the
-- whole snapshot row in force that month, with month first.
--
-- The snapshot in force is snapshots_in_force's. One row per month
-- and method even if a snapshot holds a method twice, so that a join never
-- counts money twice. The workbook, focus and payment_method_violations
-- read the validity, names and types of payment methods here.
--
-- method_problems lists what is wrong with the method itself that month
-- (end not after start, inactive, terms not accepted), the rule
-- usage_validity and payment_method_violations both apply; NULL flags are
-- not problems.
CREATE OR REPLACE VIEW payment_methods_by_month AS
SELECT f.month, s.*,
       list_filter([
           CASE WHEN s.start_date IS NOT NULL AND s.end_date IS NOT NULL AND s.end_date <= s.start_date THEN 'end not after start' END,
           CASE WHEN s.is_active = false THEN 'inactive' END,
           CASE WHEN s.terms_and_conditions_accepted = false THEN 'terms not accepted' END
       ], x -> x IS NOT NULL) AS method_problems
FROM snapshots_in_force f
JOIN payment_method_snapshots s ON s.organization = f.organization AND s.id = f.key AND s.snapshot_at = f.snapshot_at
WHERE f.kind = 'payment_method'
QUALIFY row_number() OVER (PARTITION BY f.month, s.organization, s.id ORDER BY CAST(s.raw AS VARCHAR), CAST(s.spec AS VARCHAR)) = 1;
