-- 0008: the usage_day_cost view's rows, kept by the load: each load of a
-- basis usage window replaces, in its own transaction, the days of the
-- months it touches (those whose chosen granularity it can change). The
-- analysts' views that must read every day (forecasts, forecast_days,
-- anomalies, scope_daily_cost) read it through usage_day_cost, so their
-- cost follows the days, not the usage rows, kept. Migrating fills it from
-- the usage already loaded, in the same transaction.
CREATE TABLE daily_usage_cost (
    day            DATE NOT NULL, -- the UTC day (of usage.date)
    project        VARCHAR, -- the project name; NULL for usage without one
    payment_method VARCHAR, -- the payment method id; NULL when none
    family         VARCHAR, -- the meter family; NULL when none
    meter_name     VARCHAR NOT NULL, -- the meter
    currency       VARCHAR NOT NULL, -- ISO 4217 code of cost
    cost           DECIMAL(38, 12) -- the day's usage value, exact, as usage_day_cost sums it
);
