-- payment_methods_by_month: each payment method as it stood in each
-- calendar month (UTC) the usage covers, by date or by date_processed: the
-- whole snapshot row in force that month, with month first.
--
-- The snapshot in force is the latest taken before the first of the next
-- month, else (snapshots began later) the earliest one. One row per month
-- and method even if a snapshot holds a method twice, so that a join never
-- counts money twice. The workbook, focus and payment_method_violations
-- read the validity, names and types of payment methods here.
CREATE OR REPLACE VIEW payment_methods_by_month AS
WITH months AS (
    SELECT DISTINCT CAST(date_trunc('month', d) AS DATE) AS month
    FROM (SELECT unnest([date, date_processed]) AS d FROM usage)
    WHERE d IS NOT NULL
),
in_force AS (
    SELECT m.month,
           s.id,
           coalesce(max(s.snapshot_at) FILTER (WHERE s.snapshot_at < m.month + INTERVAL 1 MONTH),
                    min(s.snapshot_at)) AS snapshot_at
    FROM months m
    CROSS JOIN (SELECT DISTINCT id, snapshot_at FROM payment_method_snapshots) s
    GROUP BY m.month, s.id
)
SELECT f.month, s.*
FROM in_force f
JOIN payment_method_snapshots s ON s.id = f.id AND s.snapshot_at = f.snapshot_at
QUALIFY row_number() OVER (PARTITION BY f.month, s.id ORDER BY CAST(s.raw AS VARCHAR), CAST(s.spec AS VARCHAR)) = 1;
