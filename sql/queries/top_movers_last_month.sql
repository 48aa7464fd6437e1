-- top_movers_last_month: the ten project and meter pairs per currency
-- whose cost changed most in the latest complete month, from the
-- top_movers view.
SELECT basis,
       currency,
       rank,
       month,
       project,
       meter_name,
       previous_cost,
       cost,
       change,
       round(change_pct * 100, 2) AS change_percent
FROM top_movers
WHERE rank <= 10
ORDER BY basis, currency, rank;
