-- payment_methods_by_month: each payment method as it stood in each
-- calendar month (UTC) the usage covers, by date or by date_processed: the
-- whole snapshot row in force that month, with month first.
--
-- The snapshot in force is snapshots_in_force's. One row per month
-- and method even if a snapshot holds a method twice, so that a join never
-- counts money twice. The workbook, focus and payment_method_violations
-- read the validity, names and types of payment methods here.
CREATE OR REPLACE VIEW payment_methods_by_month AS
SELECT f.month, s.*
FROM snapshots_in_force f
JOIN payment_method_snapshots s ON s.organization = f.organization AND s.id = f.key AND s.snapshot_at = f.snapshot_at
WHERE f.kind = 'payment_method'
QUALIFY row_number() OVER (PARTITION BY f.month, s.organization, s.id ORDER BY CAST(s.raw AS VARCHAR), CAST(s.spec AS VARCHAR)) = 1;
