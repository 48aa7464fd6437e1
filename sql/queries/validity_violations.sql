-- validity_violations: usage charged to a payment method the billing rules
-- question (outside its validity, cannot tell at this granularity, a method
-- inactive, without accepted terms or with end not after start), newest
-- month first, from the payment_method_violations view.
SELECT basis,
       month,
       payment_method_name,
       payment_method,
       problem,
       violation,
       valid_from,
       valid_until,
       currency,
       first_day,
       last_day,
       rows,
       cost
FROM payment_method_violations
ORDER BY basis, month DESC, payment_method_name, problem, currency;
