-- locations: one row per location, from the latest snapshot.
-- One snapshot per organization: each organization's latest.
CREATE OR REPLACE VIEW locations AS
SELECT s.* EXCLUDE (snapshot_at, run_id), s.snapshot_at
FROM location_snapshots s
SEMI JOIN (SELECT organization, max(snapshot_at) AS snapshot_at FROM location_snapshots GROUP BY organization) l
    ON l.organization = s.organization AND l.snapshot_at = s.snapshot_at;
