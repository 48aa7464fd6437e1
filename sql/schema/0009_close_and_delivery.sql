-- 0009: a close and a delivery that survive a kill. A close records the
-- final workbook's bytes (final_sha256) before the file is put in place,
-- so a kill between the two leaves a record the next run finishes from the
-- staged file. A delivery is keyed by the content it sent, not by a path,
-- and a mail is recorded (pending, with its Message-ID) before it is sent,
-- so a resend after a kill carries the same Message-ID.
ALTER TABLE month_closes ADD COLUMN final_sha256 VARCHAR; -- sha256 of the final workbook's bytes as written at close; NULL on a reopen and for closes recorded before migration 0009
ALTER TABLE deliveries ADD COLUMN kind VARCHAR; -- month (a month's workbook, sent once the month is over) or final (a close's final workbook)
ALTER TABLE deliveries ADD COLUMN month DATE; -- the workbook's month, first day
ALTER TABLE deliveries ADD COLUMN status VARCHAR; -- pending (recorded before sending; the next run sends it again with the same message_id) or sent
ALTER TABLE deliveries ADD COLUMN message_id VARCHAR; -- the mail's Message-ID, derived from sha256; NULL for a folder
UPDATE deliveries
SET kind = CASE WHEN regexp_matches(path, '-final(-[0-9]+)?\.xlsx$') THEN 'final' ELSE 'month' END,
    month = CAST(regexp_extract(path, 'tally-cost-([0-9]{4}-[0-9]{2})', 1) || '-01' AS DATE),
    status = 'sent';
