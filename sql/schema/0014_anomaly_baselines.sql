-- 0014: the anomalies view's baselines, kept by the load. A day's baseline
-- is the median of its meter's 28 days before it (and how many of them had
-- usage), a sliding window over every day kept: computed per query, it
-- grew with the history (3–7 s over two years). Each load that rewrites
-- days of daily_usage_cost rewrites, in its own transaction, the baselines
-- those days take part in: the days themselves and the 28 after them.
-- Migrating fills it from daily_usage_cost.
CREATE TABLE daily_baselines (
    organization  VARCHAR NOT NULL, -- the organization (organizations.name)
    day           DATE NOT NULL, -- the UTC day
    project       VARCHAR NOT NULL, -- the project name; '' for usage without one
    meter_name    VARCHAR NOT NULL, -- the meter
    currency      VARCHAR NOT NULL, -- ISO 4217 code of cost and baseline
    cost          DECIMAL(38, 12), -- what the meter cost that day, exact, summed over payment methods and families; NULL as usage_day_cost's
    baseline      DECIMAL(38, 12), -- the median day of the 28 before; NULL when none of them had usage
    baseline_days BIGINT NOT NULL -- days with usage among the 28
);

-- baseline_dirty: the days a committed load rewrote in daily_usage_cost
-- whose baselines are not rewritten yet. A load adds its days in its own
-- transaction; right after it commits, the store rewrites the baselines of
-- every day listed (one at a time, so loads side by side never rewrite the
-- same baselines at once, and the last rewrite sees every load committed
-- before it) and removes them. A kill in between leaves them listed, and
-- the next writer to open the store rewrites them.
CREATE TABLE baseline_dirty (
    organization VARCHAR NOT NULL, -- the organization (organizations.name)
    from_day     DATE NOT NULL, -- the first day rewritten
    to_day       DATE NOT NULL -- the day after the last
);
