-- snapshots_in_force: which snapshot of each payment method, rate card and
-- project was in force in each calendar month (UTC) the usage covers, by
-- date or by date_processed: one row per month, kind ('payment_method',
-- 'rate_card', 'project'), organization (whose token took the snapshot:
-- each organization's snapshots are its own, and a project is its name
-- within its organization), key (the payment method id, the rate card's
-- payment method id, the project name) and snapshot_at.
--
-- The snapshot in force for a month is the latest taken before the first
-- of the next month, else (snapshots began later) the earliest one. This
-- is the one place that rule lives: payment_methods_by_month,
-- rate_card_matches and focus read it.
CREATE OR REPLACE VIEW snapshots_in_force AS
WITH months AS (
    SELECT DISTINCT month
    FROM meter_months
    UNION
    SELECT month FROM project_usage_days -- months of the per-project report, before they are usage rows
),
snapshots AS (
    SELECT DISTINCT 'payment_method' AS kind, organization, id AS key, snapshot_at FROM payment_method_snapshots
    UNION ALL
    SELECT DISTINCT 'rate_card', organization, payment_method_id, snapshot_at FROM rate_card_price_snapshots
    UNION ALL
    SELECT DISTINCT 'project', organization, name, snapshot_at FROM project_snapshots
)
SELECT m.month,
       s.kind,
       s.organization,
       s.key,
       coalesce(max(s.snapshot_at) FILTER (WHERE s.snapshot_at < m.month + INTERVAL 1 MONTH),
                min(s.snapshot_at)) AS snapshot_at
FROM months m
CROSS JOIN snapshots s
GROUP BY m.month, s.kind, s.organization, s.key;
