-- 0017: the day a run counted as "today" when it was given one (--as-of,
-- TALLY_AS_OF): a replay of a missed night decides its lookback, months,
-- close and forecasts as of that day, and whoever reads runs must be able
-- to tell it from a run of the night itself.
ALTER TABLE runs ADD COLUMN as_of DATE; -- "today" of a replay (--as-of), NULL for a run as of its own day
