-- usage_finest: the usage_rows that count once whatever mix of
-- granularities is loaded: for each basis and day (of period_at), those of
-- the granularity usage_coverage chooses for it (the finest loaded that
-- covers the whole day, or the whole month for month rows). A small finer
-- fetch replaces only the days it covers; the analyst views that sum usage
-- read it. Rows of a day no loaded window covers (a ledger row lost) are
-- not counted: load them again with tally fetch.
CREATE OR REPLACE VIEW usage_finest AS
SELECT u.*
FROM usage_rows u
SEMI JOIN usage_coverage c
    ON c.organization = u.organization AND c.basis = u.basis AND c.granularity = u.granularity AND c.day = CAST(u.period_at AS DATE);
