-- 0018: what a closed month's frozen and Correction rows in the focus view
-- carry besides their figures, kept at their grain. The view worked it out
-- from the closed months' usage keys on every read (a common table
-- expression joined in two branches of its union), and with it DuckDB no
-- longer pruned the usage branch's unused columns: SELECT count(*) FROM
-- focus took 3.6 s at 6M rows, against 0.50 s without it, even on a store
-- with no closed month. The close now fills this table (sql/close/
-- month_close_keys.sql), as does a load that adds usage keys to a closed
-- month; the writer fills it for months closed before this migration when
-- it opens the store.
CREATE TABLE month_close_keys (
    organization          VARCHAR NOT NULL, -- the organization (closed_months.organization)
    month                 DATE NOT NULL, -- the closed month, its first day
    basis                 VARCHAR NOT NULL, -- the close's basis
    granularity           VARCHAR NOT NULL, -- the close's granularity
    project               VARCHAR NOT NULL, -- project name, '' for none
    meter_name            VARCHAR NOT NULL, -- the meter
    payment_method        VARCHAR NOT NULL, -- payment method id, '' for none
    currency              VARCHAR NOT NULL, -- ISO 4217 code
    meter_sku             VARCHAR, -- the smallest sku of the month's usage keys at this grain
    family                VARCHAR, -- the smallest meter family of those keys
    solution              VARCHAR, -- the smallest solution of those keys
    unit                  VARCHAR, -- the smallest usage unit of those keys
    payment_method_name   VARCHAR, -- the smallest payment method name of those keys
    price_name            VARCHAR, -- the rate card price those keys matched in their currency (rate_card_matches.price_name)
    price_unit            VARCHAR, -- that price's unit
    card_snapshot_at      TIMESTAMP, -- the rate card snapshot the price comes from
    card_price            DECIMAL(38, 12), -- that price
    project_display_name  VARCHAR, -- the project's display name in its snapshot in force
    location_name         VARCHAR, -- the project's location in that snapshot
    location_display_name VARCHAR -- that location's display name
);
