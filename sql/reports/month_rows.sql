-- month_rows: how many usage rows a workbook for the month would read
-- (month_usage's), so a command can say a month has none instead of
-- writing an empty workbook silently. Not a sheet.
SELECT count(*) AS rows
FROM month_usage;
