-- 0001: the tables Tally loads. All times are UTC (TIMESTAMP without zone).
-- Money is DECIMAL(38,12): 26 integer digits and 12 decimals, wider than any
-- cost the interface sends; a cost with more decimals is refused on load,
-- never rounded.

-- One row per MeterData row the interface returned. Rows are replaced window
-- by window (see fetch_windows); basis says which date the window filtered on:
-- 'usage' (sample time, `date`) or 'reported' (charge time, `date_processed`).
CREATE TABLE usage (
    granularity         VARCHAR NOT NULL, -- time bucket the interface was asked for: hour, day, week, month or year
    basis               VARCHAR NOT NULL, -- which date the window filtered on: usage (date, when it happened) or reported (date_processed, when charged)
    date                TIMESTAMP NOT NULL, -- start of the usage bucket, UTC, truncated to the granularity
    date_processed      TIMESTAMP, -- when the interface charged it, truncated to the granularity; NULL until charged
    meter_name          VARCHAR NOT NULL, -- the meter, as the interface names it
    meter_sku           VARCHAR, -- the meter's sku, matched first against rate card skus
    family              VARCHAR, -- product family
    solution            VARCHAR, -- solution within the family
    unit                VARCHAR, -- unit of quantity, e.g. gigabytes or minutes
    quantity            DOUBLE NOT NULL, -- units accrued in the bucket
    price               DOUBLE, -- per-unit price the interface sent (cost divided by quantity)
    cost                DECIMAL(38, 12) NOT NULL, -- usage value in currency, exact; what is billed depends on entitlement_type
    currency            VARCHAR NOT NULL, -- ISO 4217 code of cost; never add amounts of different currencies
    entitlement         VARCHAR, -- entitlement applied, NULL when billed directly
    entitlement_type    VARCHAR, -- license (covered, nothing billed), cash, quantity or pre-commitment (drawn from a balance), other values as sent
    payment_method      VARCHAR, -- id of the payment method charged
    payment_method_name VARCHAR, -- name of the payment method charged
    project             VARCHAR, -- project name
    run_id              UUID NOT NULL, -- the Tally run that loaded the row (runs.id)
    fetched_at          TIMESTAMP NOT NULL -- when Tally loaded the row, UTC
);

-- The ledger: one row per window loaded, replaced when the window is fetched
-- again. "end" is exclusive, like the interface's endDate.
CREATE TABLE fetch_windows (
    granularity VARCHAR NOT NULL, -- granularity the window was fetched at
    basis       VARCHAR NOT NULL, -- usage or reported, as in usage.basis
    scope       VARCHAR NOT NULL, -- the query's filters (projects, payment methods, meters), or all
    start       DATE NOT NULL, -- first day of the window, inclusive
    "end"       DATE NOT NULL, -- day after the window, exclusive, like the interface's endDate
    rows        BIGINT NOT NULL, -- usage rows the window holds
    run_id      UUID NOT NULL, -- the run that loaded it (runs.id)
    fetched_at  TIMESTAMP NOT NULL, -- when it was loaded, UTC
    requests    INTEGER NOT NULL DEFAULT 0, -- requests sent for the window, retries included
    retries     INTEGER NOT NULL DEFAULT 0, -- requests that were retries
    bytes       BIGINT NOT NULL DEFAULT 0, -- bytes of answer read
    duration_ms BIGINT NOT NULL DEFAULT 0 -- time the window took, in milliseconds
);

-- One row per run of a Tally command that writes.
CREATE TABLE runs (
    id       UUID PRIMARY KEY, -- run id, a time-ordered UUID (v7)
    job      VARCHAR, -- the schedule.jobs entry that ran, NULL for a command run by hand
    command  VARCHAR NOT NULL, -- the tally command: fetch, run, schedule
    started  TIMESTAMP NOT NULL, -- when the run started, UTC
    finished TIMESTAMP, -- when it ended, UTC; NULL while running
    status   VARCHAR NOT NULL, -- running, ok, partial, failed, skipped
    error    VARCHAR, -- why it was not ok, NULL when it was
    rows     BIGINT NOT NULL DEFAULT 0, -- usage rows loaded
    windows  INTEGER NOT NULL DEFAULT 0 -- windows loaded
);

-- Reference data, as dated snapshots: a report for an old month uses the
-- snapshot in force then. A snapshot is every row with one snapshot_at.
CREATE TABLE payment_method_snapshots (
    snapshot_at                   TIMESTAMP NOT NULL, -- when the snapshot was taken, UTC
    run_id                        UUID NOT NULL, -- the run that took it
    id                            VARCHAR NOT NULL, -- payment method id
    organization_id               VARCHAR, -- organization the method belongs to
    display_name                  VARCHAR, -- name shown in the web application
    created                       TIMESTAMP, -- when the method was created
    type                          VARCHAR NOT NULL, -- variant: direct or a marketplace type, as sent
    auto_purchase_stream_licenses BOOLEAN, -- true: streaming is billed through monthly charges; false: by the minute
    start_date                    DATE,   -- first valid day; NULL: no lower bound
    end_date                      DATE,   -- first invalid day; NULL: never expires
    product_publication_name      VARCHAR, -- product publication holding the pricing
    sales_order_number            VARCHAR, -- sales order document number (direct methods)
    notes                         VARCHAR, -- note to the customer
    projects                      VARCHAR[], -- names of the projects billed with the method
    is_active                     BOOLEAN, -- status.isActive
    terms_and_conditions_accepted BOOLEAN, -- status.termsAndConditionsAccepted
    spec                          JSON, -- the method's whole spec, as sent
    raw                           JSON -- the whole payment method, as sent
);

-- One row per rate card price; a price's location prices are further rows
-- with location_group set (NULL on the base price).
CREATE TABLE rate_card_price_snapshots (
    snapshot_at              TIMESTAMP NOT NULL, -- when the snapshot was taken, UTC
    run_id                   UUID NOT NULL, -- the run that took it
    payment_method_id        VARCHAR NOT NULL, -- payment method the rate card belongs to
    product_publication_id   VARCHAR, -- product publication id
    product_publication_name VARCHAR, -- product publication name
    is_private_offer         BOOLEAN, -- true when the card is for one customer only
    currency                 VARCHAR, -- currency of price
    family                   VARCHAR, -- product family of the entry
    solution                 VARCHAR, -- solution of the entry
    name                     VARCHAR, -- price name, e.g. advanced_sd(video_encoding_ondemand)
    display_name             VARCHAR, -- price name shown to people
    sku                      VARCHAR, -- price sku, matched against usage.meter_sku
    unit                     VARCHAR, -- unit the price is per
    location_group           VARCHAR, -- location group of a location price; NULL on the base price
    price                    DECIMAL(38, 12) NOT NULL -- price per unit, exact
);

-- Projects as listed, one row per project a snapshot.
CREATE TABLE project_snapshots (
    snapshot_at                TIMESTAMP NOT NULL, -- when the snapshot was taken, UTC
    run_id                     UUID NOT NULL, -- the run that took it
    id                         VARCHAR, -- project id
    name                       VARCHAR NOT NULL, -- project name, as usage.project
    display_name               VARCHAR, -- name shown in the web application
    is_active                  BOOLEAN, -- spec.isActive
    location_id                VARCHAR, -- location the project's resources are created in
    location_name              VARCHAR, -- name of that location
    assigned_payment_method_id VARCHAR, -- payment method the project is billed with
    raw                        JSON -- the whole project, as sent
);

-- Locations as listed, one row per location a snapshot.
CREATE TABLE location_snapshots (
    snapshot_at  TIMESTAMP NOT NULL, -- when the snapshot was taken, UTC
    run_id       UUID NOT NULL, -- the run that took it
    id           VARCHAR, -- location id
    name         VARCHAR NOT NULL, -- location name
    display_name VARCHAR, -- name shown to people
    type         VARCHAR, -- SaaS or Dedicated
    cloud_name   VARCHAR, -- the cloud the location is in
    region_name  VARCHAR, -- the region within the cloud
    raw          JSON -- the whole location, as sent
);

-- The token's organization, one row a snapshot.
CREATE TABLE organization_snapshots (
    snapshot_at TIMESTAMP NOT NULL, -- when the snapshot was taken, UTC
    run_id      UUID NOT NULL, -- the run that took it
    id          VARCHAR, -- organization id
    name        VARCHAR, -- organization name
    raw         JSON -- the whole organization, as sent
);
