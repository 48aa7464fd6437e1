-- month_close: the report month's latest close or reopen in force for the
-- basis and granularity (none when it was never closed), and the final
-- workbook of the latest close of the same kind, for the Summary's month
-- status and close stamp. A group's workbook ($org NULL) reads the closes
-- of every organization at once; an organization's, its own and those (at
-- a tie its own is in force, as closed_months).
--
-- Parameters: $basis, $granularity, $month_start, $org.
WITH acts AS (
    SELECT *
    FROM month_closes
    WHERE month = $month_start AND basis = $basis AND granularity = $granularity
      AND (organization IS NULL OR organization = $org)
),
latest AS (
    SELECT * FROM acts ORDER BY acted_at DESC, organization IS NULL, id DESC LIMIT 1
)
SELECT l.action, l.acted_at, l.who, l.reason, l.rows, l.content_hash,
       CAST(l.id AS VARCHAR) AS id,
       (SELECT c.final_workbook FROM acts c
        WHERE c.action = 'close' AND c.organization IS NOT DISTINCT FROM l.organization
        ORDER BY c.acted_at DESC, c.id DESC LIMIT 1) AS final_workbook,
       (SELECT count(*) FROM acts c
        WHERE c.action = 'close' AND c.organization IS NOT DISTINCT FROM l.organization) AS closes,
       -- For a group's workbook: the organizations reopened on their own
       -- since (their latest own row is a reopen after it).
       (SELECT string_agg(organization, ', ' ORDER BY organization) FROM (
            SELECT organization, arg_max(action, (acted_at, id)) AS action, max(acted_at) AS last_at
            FROM month_closes
            WHERE month = $month_start AND basis = $basis AND granularity = $granularity
              AND organization IS NOT NULL AND $org IS NULL
            GROUP BY organization)
        WHERE action = 'reopen' AND last_at > l.acted_at) AS reopened_since
FROM latest l;
