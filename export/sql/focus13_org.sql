-- tally_focus_org: each organization's id and name, for the billing
-- account of the FOCUS 1.3 rows (see focus13Lookups). The organization of a
-- row is its own (the focus view's x_Organization, usage.organization):
-- its id and name are those of its latest snapshot, else the organizations
-- table's.
SET VARIABLE tally_focus_org = (
SELECT map_from_entries(coalesce(list((organization, {'id': id, 'name': name})), []))
FROM (
    SELECT coalesce(s.organization, o.name) AS organization,
           coalesce(s.id, o.id) AS id,
           coalesce(s.name, o.name) AS name
    FROM (SELECT organization, arg_max(id, snapshot_at) AS id, arg_max(name, snapshot_at) AS name
          FROM organization_snapshots GROUP BY organization) s
    FULL JOIN organizations o ON o.name = s.organization
))
