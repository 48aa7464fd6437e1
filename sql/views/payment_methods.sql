-- payment_methods: one row per payment method, from the latest snapshot.
CREATE OR REPLACE VIEW payment_methods AS
SELECT * EXCLUDE (snapshot_at, run_id), snapshot_at
FROM payment_method_snapshots
WHERE snapshot_at = (SELECT max(snapshot_at) FROM payment_method_snapshots);
