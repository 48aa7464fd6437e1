-- projects: one row per project, from the latest snapshot.
CREATE OR REPLACE VIEW projects AS
SELECT * EXCLUDE (snapshot_at, run_id), snapshot_at
FROM project_snapshots
WHERE snapshot_at = (SELECT max(snapshot_at) FROM project_snapshots);
