-- 0001: the tables Tally loads. All times are UTC (TIMESTAMP without zone).
-- Money is DECIMAL(38,12): 26 integer digits and 12 decimals, wider than any
-- cost the interface sends; a cost with more decimals is refused on load,
-- never rounded.

-- One row per MeterData row the interface returned. Rows are replaced window
-- by window (see fetch_windows); basis says which date the window filtered on:
-- 'usage' (sample time, `date`) or 'reported' (charge time, `date_processed`).
CREATE TABLE usage (
    granularity         VARCHAR NOT NULL,
    basis               VARCHAR NOT NULL,
    date                TIMESTAMP NOT NULL,
    date_processed      TIMESTAMP,
    meter_name          VARCHAR NOT NULL,
    meter_sku           VARCHAR,
    family              VARCHAR,
    solution            VARCHAR,
    unit                VARCHAR,
    quantity            DOUBLE NOT NULL,
    price               DOUBLE,
    cost                DECIMAL(38, 12) NOT NULL,
    currency            VARCHAR NOT NULL,
    entitlement         VARCHAR,
    entitlement_type    VARCHAR,
    payment_method      VARCHAR,
    payment_method_name VARCHAR,
    project             VARCHAR,
    run_id              UUID NOT NULL,
    fetched_at          TIMESTAMP NOT NULL
);

-- The ledger: one row per window loaded, replaced when the window is fetched
-- again. "end" is exclusive, like the interface's endDate.
CREATE TABLE fetch_windows (
    granularity VARCHAR NOT NULL,
    basis       VARCHAR NOT NULL,
    scope       VARCHAR NOT NULL,
    start       DATE NOT NULL,
    "end"       DATE NOT NULL,
    rows        BIGINT NOT NULL,
    run_id      UUID NOT NULL,
    fetched_at  TIMESTAMP NOT NULL,
    requests    INTEGER NOT NULL DEFAULT 0,
    retries     INTEGER NOT NULL DEFAULT 0,
    bytes       BIGINT NOT NULL DEFAULT 0,
    duration_ms BIGINT NOT NULL DEFAULT 0
);

-- One row per run of a Tally command that writes.
CREATE TABLE runs (
    id       UUID PRIMARY KEY,
    job      VARCHAR,
    command  VARCHAR NOT NULL,
    started  TIMESTAMP NOT NULL,
    finished TIMESTAMP,
    status   VARCHAR NOT NULL, -- running, ok, partial, failed, skipped
    error    VARCHAR,
    rows     BIGINT NOT NULL DEFAULT 0,
    windows  INTEGER NOT NULL DEFAULT 0
);

-- Reference data, as dated snapshots: a report for an old month uses the
-- snapshot in force then. A snapshot is every row with one snapshot_at.
CREATE TABLE payment_method_snapshots (
    snapshot_at                   TIMESTAMP NOT NULL,
    run_id                        UUID NOT NULL,
    id                            VARCHAR NOT NULL,
    organization_id               VARCHAR,
    display_name                  VARCHAR,
    created                       TIMESTAMP,
    type                          VARCHAR NOT NULL,
    auto_purchase_stream_licenses BOOLEAN,
    start_date                    DATE,   -- first valid day; NULL: no lower bound
    end_date                      DATE,   -- first invalid day; NULL: never expires
    product_publication_name      VARCHAR,
    sales_order_number            VARCHAR,
    notes                         VARCHAR,
    projects                      VARCHAR[],
    is_active                     BOOLEAN,
    terms_and_conditions_accepted BOOLEAN,
    spec                          JSON,
    raw                           JSON
);

-- One row per rate card price; a price's location prices are further rows
-- with location_group set (NULL on the base price).
CREATE TABLE rate_card_price_snapshots (
    snapshot_at              TIMESTAMP NOT NULL,
    run_id                   UUID NOT NULL,
    payment_method_id        VARCHAR NOT NULL,
    product_publication_id   VARCHAR,
    product_publication_name VARCHAR,
    is_private_offer         BOOLEAN,
    currency                 VARCHAR,
    family                   VARCHAR,
    solution                 VARCHAR,
    name                     VARCHAR,
    display_name             VARCHAR,
    sku                      VARCHAR,
    unit                     VARCHAR,
    location_group           VARCHAR,
    price                    DECIMAL(38, 12) NOT NULL
);

CREATE TABLE project_snapshots (
    snapshot_at                TIMESTAMP NOT NULL,
    run_id                     UUID NOT NULL,
    id                         VARCHAR,
    name                       VARCHAR NOT NULL,
    display_name               VARCHAR,
    is_active                  BOOLEAN,
    location_id                VARCHAR,
    location_name              VARCHAR,
    assigned_payment_method_id VARCHAR,
    raw                        JSON
);

CREATE TABLE location_snapshots (
    snapshot_at  TIMESTAMP NOT NULL,
    run_id       UUID NOT NULL,
    id           VARCHAR,
    name         VARCHAR NOT NULL,
    display_name VARCHAR,
    type         VARCHAR,
    cloud_name   VARCHAR,
    region_name  VARCHAR,
    raw          JSON
);

CREATE TABLE organization_snapshots (
    snapshot_at TIMESTAMP NOT NULL,
    run_id      UUID NOT NULL,
    id          VARCHAR,
    name        VARCHAR,
    raw         JSON
);
