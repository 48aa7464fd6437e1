-- 0013: what daily_usage_totals keeps besides 0011's sums, so that the
-- views that still read every usage row read days instead:
-- payment_method_violations judges each total's first and last bucket
-- against the method's validity (rows within a day of one granularity
-- share it: only a total whose first and last bucket differ is judged row
-- by row), and meter_daily_cost and the named query cost_by_meter_day sum
-- them per unit and per day of date; allocation_charges sums them per
-- family. The totals are now also per day of date (which is day for every
-- basis but reported), unit and family. Migrating
-- fills the table again from the usage already loaded, in the same
-- transaction.
ALTER TABLE daily_usage_totals ADD COLUMN date_day DATE; -- the UTC day of date (the bucket's start); day for basis usage
ALTER TABLE daily_usage_totals ADD COLUMN unit VARCHAR; -- the rows' unit; NULL when none
ALTER TABLE daily_usage_totals ADD COLUMN family VARCHAR; -- the meter's family; NULL when none
ALTER TABLE daily_usage_totals ADD COLUMN first_at TIMESTAMP; -- the earliest date (bucket start) of the rows
ALTER TABLE daily_usage_totals ADD COLUMN last_at TIMESTAMP; -- the latest date of the rows
ALTER TABLE daily_usage_totals ADD COLUMN streaming_cost DECIMAL(38, 12); -- the cost of the rows whose solution is streaming (lowercased); NULL when none is
