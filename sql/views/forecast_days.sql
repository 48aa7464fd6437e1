-- forecast_days: every day of every month with usage, per budget scope and
-- currency: what it cost (kind actual) or, for the days after as_of in the
-- current month, what it is expected to cost (kind forecast).
--
-- as_of is the last complete day. A day is complete once a later day has
-- been fetched (the ledger, fetch_windows, covers past it), whether or
-- not the later day held usage: as_of is the day before the later of the
-- last fetched day and the latest day with usage. A window counts as
-- fetched only up to the day it was loaded (a later --to fetches nothing
-- yet to come). So when the interface stops reporting, the days fetched
-- and empty are actual days that cost 0, never days still to come, and
-- last_usage_day says where the usage stops. Without a ledger (usage
-- loaded by hand) as_of is the day before the latest day with usage. A forecast day costs the mean
-- of the same weekday over the 28 days up to as_of (four of each weekday;
-- a day without usage counts as 0), so a quiet weekend stays quiet. The
-- latest, partial day is forecast too, at no less than its cost so far,
-- which is also in forecasts.actual_cost.
-- scope_daily_cost is summed once (sdc) and read five times below, not
-- summed from the days for each read.
--
-- A replay (tally --as-of D) sets the connection's variable tally_as_of
-- (SET VARIABLE tally_as_of = DATE 'D'): the figures are then as they
-- stood on the morning of D, as a night's run on D saw them. The days
-- from D on are not yet data: their usage is left out, and the ledger
-- shows the days up to D - 1 as fetched (last_fetched_day). The ledger
-- reaching D still makes D - 1 complete, as that night's fetch of D did:
-- as_of is the day before the later of the last fetched day and the
-- latest day with usage, that later day no later than D, so as_of is at
-- most D - 1 and the forecast month is D's. Unset (NULL), every day
-- loaded counts. DuckDB reads the variable once, as it binds the query:
-- unset, the conditions are gone, not evaluated a row at a time.
CREATE OR REPLACE VIEW forecast_days AS
WITH sdc AS MATERIALIZED (
    SELECT * FROM scope_daily_cost
    WHERE CAST(getvariable('tally_as_of') AS DATE) IS NULL OR day < CAST(getvariable('tally_as_of') AS DATE)
),
fetched AS (
    SELECT max(least(CAST("end" AS DATE) - 1, CAST(fetched_at AS DATE))) AS last_fetched_day
    FROM fetch_windows
    WHERE granularity IN ('hour', 'day')
),
latest AS (
    -- least skips NULL: without a replay day, no bound.
    SELECT least(greatest(max(s.day), coalesce(any_value(f.last_fetched_day), max(s.day))), CAST(getvariable('tally_as_of') AS DATE)) - 1 AS as_of,
           max(s.day) AS last_usage_day,
           least(any_value(f.last_fetched_day), CAST(getvariable('tally_as_of') AS DATE) - 1) AS last_fetched_day
    FROM sdc s, fetched f
),
series AS (
    -- Every month with usage, and the current month for every scope with
    -- usage in the 28 days the forecast learns from, even before its
    -- first cost of the month arrives.
    SELECT DISTINCT scope_kind, scope, currency, CAST(date_trunc('month', day) AS DATE) AS month
    FROM sdc, latest
    WHERE day <= as_of + 1
    UNION
    SELECT DISTINCT scope_kind, scope, currency, CAST(date_trunc('month', as_of + 1) AS DATE)
    FROM sdc, latest
    WHERE day > as_of - 28 AND day <= as_of
),
days AS (
    SELECT s.*, CAST(g.d AS DATE) AS day, a.as_of, a.last_usage_day, a.last_fetched_day
    FROM series s, latest a,
         generate_series(CAST(s.month AS TIMESTAMP), CAST(s.month + INTERVAL 1 MONTH - INTERVAL 1 DAY AS TIMESTAMP), INTERVAL 1 DAY) AS g(d)
),
profile AS (
    SELECT scope_kind, scope, currency, isodow(day) AS dow, CAST(sum(cost) / 4 AS DECIMAL(38, 12)) AS rate
    FROM sdc, latest
    WHERE day > as_of - 28 AND day <= as_of
    GROUP BY ALL
)
SELECT d.month, -- first day of the month
       d.scope_kind, -- all, project, payment_method or family
       d.scope, -- the project, payment method id or family; '' for all
       d.currency,
       d.day, -- the UTC day
       CASE WHEN d.day <= d.as_of THEN 'actual' ELSE 'forecast' END AS kind, -- actual: what it cost; forecast: expected
       CASE WHEN d.day <= d.as_of THEN coalesce(c.cost, 0)
            ELSE greatest(coalesce(p.rate, 0), coalesce(c.cost, 0)) END AS cost, -- the day's cost, or its forecast (never below what it cost so far)
       d.as_of, -- the last complete day of the data
       d.last_usage_day, -- the latest day holding any usage; complete when it is on or before as_of
       d.last_fetched_day, -- the latest day the ledger covers, fetched up to the day it was loaded (under a replay, up to its eve); days after last_usage_day up to it were fetched and held no usage
       c.cost AS recorded_cost -- what the day cost as loaded so far, the latest partial day too; NULL for a day without usage
FROM days d
LEFT JOIN sdc c
       ON c.scope_kind = d.scope_kind AND c.scope = d.scope AND c.currency = d.currency AND c.day = d.day
LEFT JOIN profile p
       ON p.scope_kind = d.scope_kind AND p.scope = d.scope AND p.currency = d.currency AND p.dow = isodow(d.day)
WHERE d.day <= d.as_of OR d.month = CAST(date_trunc('month', d.as_of + 1) AS DATE);
