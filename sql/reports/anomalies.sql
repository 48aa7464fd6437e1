-- anomalies: the cost anomalies of the report month's days (the
-- anomalies view: basis usage, whatever the workbook's basis), for the
-- Flags sheet's Anomalies section.
--
-- Parameters: $month_start, $month_end (exclusive).
SELECT day,
       project,
       meter_name,
       currency,
       CAST(cost AS VARCHAR) AS cost,
       CAST(baseline AS VARCHAR) AS baseline,
       CAST(excess AS VARCHAR) AS excess,
       score
FROM anomalies
WHERE day >= $month_start AND day < $month_end
ORDER BY day, project, meter_name, currency;
