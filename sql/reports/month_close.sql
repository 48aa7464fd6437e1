-- month_close: the report month's latest close or reopen for the basis and
-- granularity (none when it was never closed), and the final workbook of
-- the latest close, for the Summary's month status and close stamp.
--
-- Parameters: $basis, $granularity, $month_start.
SELECT action, acted_at, who, reason, rows, content_hash,
       (SELECT final_workbook FROM month_closes c
        WHERE c.month = $month_start AND c.basis = $basis AND c.granularity = $granularity AND c.action = 'close'
        ORDER BY acted_at DESC, id DESC LIMIT 1) AS final_workbook,
       (SELECT count(*) FROM month_closes c
        WHERE c.month = $month_start AND c.basis = $basis AND c.granularity = $granularity AND c.action = 'close') AS closes
FROM month_closes
WHERE month = $month_start AND basis = $basis AND granularity = $granularity
ORDER BY acted_at DESC, id DESC
LIMIT 1;
