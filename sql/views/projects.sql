-- projects: one row per project, from the latest snapshot.
-- One snapshot per organization: each organization's latest.
CREATE OR REPLACE VIEW projects AS
SELECT s.* EXCLUDE (snapshot_at, run_id), s.snapshot_at
FROM project_snapshots s
SEMI JOIN (SELECT organization, max(snapshot_at) AS snapshot_at FROM project_snapshots GROUP BY organization) l
    ON l.organization = s.organization AND l.snapshot_at = s.snapshot_at;
