-- 0016: a usage key numbers every text of its rows. The load keeps
-- daily_usage_totals by reading its window's rows back and summing them per
-- day and per text; grouping five million rows on eleven texts (a payment
-- method is a UUID, a meter name twenty letters) was a tenth of the fetch's
-- CPU and most of its memory beyond the insert. With every text in the key,
-- the rows are summed per key and day (integers and dates), and the texts
-- are joined to the sums once per key. Keys made under 0015 number fewer
-- texts, so they are dropped with the rows' numbers: the column is made
-- anew (every row without a key, which costs no rewrite of the table), and
-- the writer numbers the rows again when it opens the store, a month at a
-- time, as after 0015.
ALTER TABLE usage DROP COLUMN key_id;
DROP TABLE usage_keys;
CREATE TABLE usage_keys (
    id                  INTEGER NOT NULL, -- the key, as usage.key_id
    organization        VARCHAR NOT NULL, -- the rows' organization
    basis               VARCHAR NOT NULL, -- the rows' basis
    granularity         VARCHAR NOT NULL, -- the rows' granularity
    month               TIMESTAMP NOT NULL, -- the first instant of the rows' month of date (UTC)
    period_month        TIMESTAMP, -- the first instant of the rows' month of period_at (usage_rows: date_processed for basis reported, else date); NULL when they have none
    payment_method      VARCHAR, -- the rows' payment method, NULL as on the rows
    meter_name          VARCHAR NOT NULL, -- the rows' meter
    meter_sku           VARCHAR, -- the rows' meter sku, NULL as on the rows
    project             VARCHAR, -- the rows' project, NULL as on the rows
    family              VARCHAR, -- the rows' meter family, NULL as on the rows
    solution            VARCHAR, -- the rows' solution, NULL as on the rows
    unit                VARCHAR, -- the rows' unit, NULL as on the rows
    currency            VARCHAR NOT NULL, -- the rows' currency
    entitlement         VARCHAR, -- the rows' entitlement, NULL as on the rows
    entitlement_type    VARCHAR, -- the rows' entitlement type, NULL as on the rows
    payment_method_name VARCHAR -- the rows' payment method name, NULL as on the rows
);
ALTER TABLE usage ADD COLUMN key_id INTEGER; -- the row's usage_keys.id; NULL until Tally has numbered its organization, basis, granularity, months and texts
