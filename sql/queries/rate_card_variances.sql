-- rate_card_variances: meters billed more than 0.5 % off their rate card
-- price (reports.tolerance's default), or that could not be checked (no
-- price, several prices, another currency), newest month first, largest
-- variance first.
--
-- From the rate_card_variance view; change 0.005 for another tolerance.
SELECT basis,
       month,
       payment_method_name,
       meter_name,
       currency,
       quantity,
       cost,
       card_price,
       expected_cost,
       variance,
       round(variance_pct * 100, 3) AS variance_percent,
       status
FROM rate_card_variance
WHERE status NOT IN ('ok', 'variance')
   OR (status = 'variance' AND (variance_pct IS NULL OR abs(variance_pct) > 0.005))
ORDER BY basis, month DESC, abs(coalesce(variance, 0)) DESC, meter_name, payment_method_name;
