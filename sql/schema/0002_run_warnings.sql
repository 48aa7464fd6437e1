-- 0002: what a run warns about without failing, such as an optional
-- reference resource (the organization, locations) the interface or the
-- token does not offer; tally status shows them.
ALTER TABLE runs ADD COLUMN warnings VARCHAR; -- warnings of the run, one a line; NULL when none
