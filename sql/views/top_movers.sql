-- top_movers: the project and meter pairs whose cost changed most in the
-- latest complete month (the month before the newest month loaded) against
-- the month before it, ranked per basis and currency by the size of the
-- change, growth and decline alike (rank 1 moved most).
--
-- Built on cost_month_over_month; ties are broken by project and meter so
-- the ranking is stable.
CREATE OR REPLACE VIEW top_movers AS
WITH complete AS (
    SELECT basis, CAST(max(month) - INTERVAL 1 MONTH AS DATE) AS month
    FROM cost_month_over_month
    GROUP BY basis
)
SELECT row_number() OVER (PARTITION BY c.basis, c.currency ORDER BY abs(c.change) DESC, c.organization, c.project NULLS LAST, c.meter_name) AS rank,
       c.*
FROM cost_month_over_month c
JOIN complete l ON l.basis = c.basis AND l.month = c.month
WHERE c.change <> 0;
