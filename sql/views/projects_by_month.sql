-- projects_by_month: each project as it stood in each calendar month (UTC)
-- the usage covers: its display name and location in the snapshot in
-- force that month (snapshots_in_force), and the location's latest display
-- name. One row per month, organization and project even if a snapshot
-- holds a project twice, so that a join never counts money twice. focus
-- reads its sub-account and region here, and a close keeps them for its
-- month (month_close_keys).
CREATE OR REPLACE VIEW projects_by_month AS
WITH location AS (
    -- a location's latest name for display; its id (the name) is what the
    -- project snapshot in force gives
    SELECT organization, name, display_name
    FROM location_snapshots
    QUALIFY row_number() OVER (PARTITION BY organization, name ORDER BY snapshot_at DESC, CAST(raw AS VARCHAR)) = 1
)
SELECT p.organization, -- the organization whose snapshot it is
       p.month, -- the month, its first day
       p.name, -- the project name, as usage.project
       p.display_name, -- its display name in the snapshot in force
       p.location_name, -- its location (the location's name), NULL for none
       location.display_name AS location_display_name -- that location's latest display name
FROM (
    SELECT s.organization, f.month, s.name, s.display_name, nullif(s.location_name, '') AS location_name
    FROM snapshots_in_force f
    JOIN project_snapshots s ON s.organization = f.organization AND s.name = f.key AND s.snapshot_at = f.snapshot_at
    WHERE f.kind = 'project'
    QUALIFY row_number() OVER (PARTITION BY f.month, s.organization, s.name ORDER BY CAST(s.raw AS VARCHAR)) = 1
) p
LEFT JOIN location ON location.organization = p.organization AND location.name = p.location_name;
