-- 0007: the per-project usage report (usage.source: projects). Each run
-- reads every configured project's month to date and keeps it as a dated
-- snapshot; the day-by-day quantities are the differences between
-- consecutive snapshots (project_usage_days), priced from the rate card
-- into usage rows of basis 'estimated', whose cost is NULL when no single
-- rate card price matches.
CREATE TABLE project_usage_snapshots (
    taken_at     TIMESTAMP NOT NULL, -- when Tally read the report, UTC
    run_id       UUID NOT NULL, -- the run that read it (runs.id)
    project      VARCHAR NOT NULL, -- the project's name
    period_start DATE NOT NULL, -- supplemental.start: the first day the report covers
    period_end   DATE NOT NULL, -- supplemental.end: the day after the last it covers
    meter_name   VARCHAR NOT NULL, -- the meter
    unit         VARCHAR, -- its unit
    solution     VARCHAR, -- its solution
    family       VARCHAR, -- its product family
    quantity     DECIMAL(38, 12) NOT NULL -- units from period_start to taken_at, exact as sent
);

ALTER TABLE usage ALTER cost DROP NOT NULL;
