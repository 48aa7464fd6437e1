-- payment_methods: one row per payment method, from the latest snapshot.
-- One snapshot per organization: each organization's latest.
CREATE OR REPLACE VIEW payment_methods AS
SELECT s.* EXCLUDE (snapshot_at, run_id), s.snapshot_at
FROM payment_method_snapshots s
SEMI JOIN (SELECT organization, max(snapshot_at) AS snapshot_at FROM payment_method_snapshots GROUP BY organization) l
    ON l.organization = s.organization AND l.snapshot_at = s.snapshot_at;
