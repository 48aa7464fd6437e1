-- 0015: a usage row's dimension key. The focus view joins every usage row
-- to its month's rate card price, payment method and project snapshot;
-- on the row's texts (organization, month, payment method, meter, sku,
-- project) those joins were most of a count over 24M rows (4 s of 2 core
-- seconds' worth of hashing text). The load now numbers each distinct
-- set of them in usage_keys and stores the number on the row, so the view
-- joins the few thousand keys to the dimensions once and each row to its
-- key on one integer. A row without a key (loaded before this migration,
-- until the writer's fill reaches its month, or written by other means)
-- is joined on its texts as before: the view's rows are the same either
-- way.
CREATE TABLE usage_keys (
    id             INTEGER NOT NULL, -- the key, as usage.key_id
    organization   VARCHAR NOT NULL, -- the rows' organization
    month          TIMESTAMP NOT NULL, -- the first instant of the rows' month of date (UTC)
    payment_method VARCHAR, -- the rows' payment method, NULL as on the rows
    meter_name     VARCHAR NOT NULL, -- the rows' meter
    meter_sku      VARCHAR, -- the rows' meter sku, NULL as on the rows
    project        VARCHAR -- the rows' project, NULL as on the rows
);
ALTER TABLE usage ADD COLUMN key_id INTEGER; -- the row's usage_keys.id; NULL until Tally has numbered its organization, month, payment method, meter, sku and project
