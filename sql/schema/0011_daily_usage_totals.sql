-- 0011: the usage_day_totals view's rows, kept by the load: every usage
-- row summed per basis, granularity, day (of period_at), month of date and
-- of date_processed, project, payment method, meter, sku, currency and how
-- it is paid, with its month stored beside the day. Each load replaces, in
-- its own transaction, the days of its window at its granularity and basis
-- (the only rows it changes); the per-project estimates replace their
-- month. The monthly analyst views (project_monthly_cost,
-- cost_month_over_month, rate_card_variance, entitlement_coverage) sum it
-- under usage_coverage's choice of granularity, so an analyst's WHERE
-- month = … is a condition on this stored column, which DuckDB takes to
-- the scan, and reading every month reads days, not usage rows. The months
-- each meter was used or charged in (meter_months, for the snapshots in
-- force and the rate card matches) and meter_skus read it too. Migrating
-- fills it from the usage already loaded, in the same transaction.
CREATE TABLE daily_usage_totals (
    organization        VARCHAR NOT NULL DEFAULT '', -- the organization (organizations.name), as usage.organization
    basis               VARCHAR NOT NULL, -- usage, reported or estimated, as in usage.basis
    granularity         VARCHAR NOT NULL, -- the usage rows' granularity
    month               DATE NOT NULL, -- the first day of day's month
    next_month          DATE NOT NULL, -- the first day of the month after: cost_month_over_month compares a month with the one before on it
    day                 DATE NOT NULL, -- the UTC day of period_at (date, or date_processed for basis reported)
    date_month          DATE NOT NULL, -- the first day of date's month
    processed_month     DATE, -- the first day of date_processed's month; NULL until charged
    project             VARCHAR, -- the project name; NULL for usage without one
    payment_method      VARCHAR, -- the payment method id; NULL when none
    meter_name          VARCHAR NOT NULL, -- the meter
    meter_sku           VARCHAR, -- the meter's sku; NULL when none
    currency            VARCHAR NOT NULL, -- ISO 4217 code of cost
    paid_as             VARCHAR NOT NULL, -- direct, balance, license or other, as usage_rows says
    payment_method_name VARCHAR, -- the least non-empty payment method name of the rows; NULL when none
    rows                BIGINT NOT NULL, -- usage rows summed
    quantity            DECIMAL(38, 12), -- their quantities, each as DECIMAL(38, 12), summed
    cost                DECIMAL(38, 12) -- their cost, exact; NULL when every row's is
);
