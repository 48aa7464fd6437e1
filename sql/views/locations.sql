-- locations: one row per location, from the latest snapshot.
CREATE OR REPLACE VIEW locations AS
SELECT * EXCLUDE (snapshot_at, run_id), snapshot_at
FROM location_snapshots
WHERE snapshot_at = (SELECT max(snapshot_at) FROM location_snapshots);
