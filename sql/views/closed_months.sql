-- closed_months: the months closed now, one row per month, basis and
-- granularity whose latest month_closes row is a close (a reopen after it
-- makes the month open again). The one rule for "is this month closed",
-- read by closed_month_adjustments and focus.
CREATE OR REPLACE VIEW closed_months AS
SELECT id, -- the close (month_closes.id)
       month, -- first day of the closed month
       basis, -- usage or reported
       granularity, -- the usage rows closed
       acted_at, -- when it was closed, UTC
       who, -- who closed it
       reason -- why, as given
FROM month_closes
QUALIFY row_number() OVER (PARTITION BY month, basis, granularity ORDER BY acted_at DESC, id DESC) = 1
    AND action = 'close';
