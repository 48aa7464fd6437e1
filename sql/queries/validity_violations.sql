-- validity_violations: usage charged to a payment method on a day outside
-- its validity (before its start date, or on or after its end date), newest
-- month first, from the payment_method_violations view.
SELECT basis,
       month,
       payment_method_name,
       payment_method,
       side,
       valid_from,
       valid_until,
       currency,
       first_day,
       last_day,
       rows,
       cost
FROM payment_method_violations
ORDER BY basis, month DESC, payment_method_name, side, currency;
