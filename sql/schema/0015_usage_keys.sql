-- 0015: a usage row's dimension key. The focus view joins every usage row
-- to its month's rate card price, payment method and project snapshot,
-- and leaves out the rows of a closed month; on the row's texts
-- (organization, month, payment method, meter, sku, project) and dates
-- those joins were most of a count over 24M rows. The load now numbers
-- each distinct set of them in usage_keys and stores the number on the
-- row, so the view works them out once per key and joins each row to its
-- key on one integer. Rows without a key (every row, right after this
-- migration) are numbered by the writer when it opens the store, before
-- anything reads them.
CREATE TABLE usage_keys (
    id             INTEGER NOT NULL, -- the key, as usage.key_id
    organization   VARCHAR NOT NULL, -- the rows' organization
    basis          VARCHAR NOT NULL, -- the rows' basis
    granularity    VARCHAR NOT NULL, -- the rows' granularity
    month          TIMESTAMP NOT NULL, -- the first instant of the rows' month of date (UTC)
    period_month   TIMESTAMP, -- the first instant of the rows' month of period_at (usage_rows: date_processed for basis reported, else date); NULL when they have none
    payment_method VARCHAR, -- the rows' payment method, NULL as on the rows
    meter_name     VARCHAR NOT NULL, -- the rows' meter
    meter_sku      VARCHAR, -- the rows' meter sku, NULL as on the rows
    project        VARCHAR -- the rows' project, NULL as on the rows
);
ALTER TABLE usage ADD COLUMN key_id INTEGER; -- the row's usage_keys.id; NULL until Tally has numbered its organization, month, payment method, meter, sku and project
