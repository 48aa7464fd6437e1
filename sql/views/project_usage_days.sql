-- project_usage_days: what each project used per meter and UTC day, from
-- the snapshots of its usage report (usage.source: projects): the
-- difference between a snapshot and the one before it in the same period,
-- dated the UTC day of the midpoint between the two reads (the day most of
-- it happened when reads are a day apart). A period's first snapshot holds everything since the
-- period began: it is dated the period's first day and marked catch_up. A
-- negative difference is a correction the interface made: kept, and
-- marked. Months before the first snapshot cannot be told.
CREATE OR REPLACE VIEW project_usage_days AS
WITH s AS (
    SELECT *,
           lag(quantity) OVER w AS prev_quantity,
           lag(taken_at) OVER w AS prev_taken_at
    FROM project_usage_snapshots
    WINDOW w AS (PARTITION BY organization, project, period_start, meter_name ORDER BY taken_at)
)
SELECT organization, -- the organization whose token read the report
       project, -- the project's name
       CASE WHEN prev_taken_at IS NULL THEN period_start
            ELSE greatest(period_start, least(CAST(prev_taken_at + (taken_at - prev_taken_at) / 2 AS DATE), period_end - 1)) END AS day, -- the UTC day the quantity is dated
       CAST(date_trunc('month', period_start) AS DATE) AS month, -- first day of the report's month
       meter_name,
       any_value(unit) AS unit,
       any_value(solution) AS solution,
       any_value(family) AS family,
       sum(quantity - coalesce(prev_quantity, 0)) AS quantity, -- units used that day, exact
       bool_or(prev_taken_at IS NULL) AS catch_up, -- true: the period's first snapshot, everything since it began
       bool_or(quantity - coalesce(prev_quantity, 0) < 0) AS correction -- true: a snapshot reported less than the one before
FROM s
GROUP BY ALL;
