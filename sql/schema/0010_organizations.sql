-- 0010: several organizations in one store. Each organization is named in
-- the config (organizations[].name); the single-organization api: form
-- takes the name the organization resource gave when the store first saw
-- it, and keeps it. That name is the organization's key in every table
-- below, so two organizations' projects of the same name, their ledgers and
-- their snapshots never mix. Migrating a single-organization store gives
-- every existing row that organization's name ({{organization}}: the
-- latest organization snapshot's name, else 'default'): nothing is fetched
-- again and every figure stays as it was. A row written without one (by
-- hand) belongs to the organization ''.
CREATE TABLE organizations (
    name       VARCHAR PRIMARY KEY, -- Tally's name for the organization: organizations[].name, or for the api: form the organization resource's name when first seen
    id         VARCHAR, -- the organization's id in the interface (organizationId), once read; NULL until then
    first_seen TIMESTAMP NOT NULL -- when this store first held it, UTC
);
INSERT INTO organizations
SELECT {{organization}}, {{organization_id}}, coalesce((SELECT min(started) FROM runs), now()::TIMESTAMP)
WHERE EXISTS (SELECT 1 FROM runs);

ALTER TABLE usage ADD COLUMN organization VARCHAR DEFAULT {{organization}}; -- the organization whose token read the row (organizations.name)
ALTER TABLE usage ALTER COLUMN organization SET DEFAULT '';
ALTER TABLE usage ADD COLUMN organization_id VARCHAR DEFAULT {{organization_id}}; -- that organization's id in the interface, when known at load
ALTER TABLE usage ALTER COLUMN organization_id DROP DEFAULT;
ALTER TABLE daily_usage_cost ADD COLUMN organization VARCHAR DEFAULT {{organization}}; -- as usage.organization
ALTER TABLE daily_usage_cost ALTER COLUMN organization SET DEFAULT '';
ALTER TABLE fetch_windows ADD COLUMN organization VARCHAR DEFAULT {{organization}}; -- the organization the window was fetched for: each has its own ledger
ALTER TABLE fetch_windows ALTER COLUMN organization SET DEFAULT '';
ALTER TABLE payment_method_snapshots ADD COLUMN organization VARCHAR DEFAULT {{organization}}; -- the organization whose token read it
ALTER TABLE payment_method_snapshots ALTER COLUMN organization SET DEFAULT '';
ALTER TABLE rate_card_price_snapshots ADD COLUMN organization VARCHAR DEFAULT {{organization}}; -- the organization whose token read it
ALTER TABLE rate_card_price_snapshots ALTER COLUMN organization SET DEFAULT '';
ALTER TABLE project_snapshots ADD COLUMN organization VARCHAR DEFAULT {{organization}}; -- the organization whose token read it; a project is its name within its organization
ALTER TABLE project_snapshots ALTER COLUMN organization SET DEFAULT '';
ALTER TABLE location_snapshots ADD COLUMN organization VARCHAR DEFAULT {{organization}}; -- the organization whose token read it
ALTER TABLE location_snapshots ALTER COLUMN organization SET DEFAULT '';
ALTER TABLE organization_snapshots ADD COLUMN organization VARCHAR DEFAULT {{organization}}; -- Tally's name for it (organizations.name); name is the interface's
ALTER TABLE organization_snapshots ALTER COLUMN organization SET DEFAULT '';
ALTER TABLE project_usage_snapshots ADD COLUMN organization VARCHAR DEFAULT {{organization}}; -- the organization whose token read the report
ALTER TABLE project_usage_snapshots ALTER COLUMN organization SET DEFAULT '';
ALTER TABLE month_close_figures ADD COLUMN organization VARCHAR DEFAULT {{organization}}; -- the organization of the figure's rows
ALTER TABLE month_close_figures ALTER COLUMN organization SET DEFAULT '';
ALTER TABLE month_closes ADD COLUMN organization VARCHAR; -- NULL: the close covers every organization of the store (the api: form's one, or a group's all at once)
ALTER TABLE deliveries ADD COLUMN organization VARCHAR; -- NULL: the store's workbook (every organization)
ALTER TABLE alerts ADD COLUMN organization VARCHAR; -- the organization whose cost it is about; NULL when it is about every organization
