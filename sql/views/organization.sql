-- organization: the token's organization, from the latest snapshot.
CREATE OR REPLACE VIEW organization AS
SELECT * EXCLUDE (snapshot_at, run_id), snapshot_at
FROM organization_snapshots
WHERE snapshot_at = (SELECT max(snapshot_at) FROM organization_snapshots);
