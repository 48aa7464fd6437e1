-- summary_movers: the five project and meter pairs per currency whose
-- usage value changed most from the month before the report month to the
-- report month, on the report's basis and granularity (in_report_month's
-- rule of what a month holds), largest change first: each month's value and the
-- change, exact. A pair absent from a month counts 0 there; a pair that did
-- not change is no mover. Backs the Summary's largest movers; the Summary
-- shows none when the previous month was not loaded (summary_months says).
-- Projects are named as By project names them (organization/project in a
-- group workbook).
--
-- Parameters: $basis, $granularity, $month_start, $org, $group.
WITH pairs AS (
    SELECT nullif(CASE WHEN $group THEN organization || '/' || coalesce(project, '') ELSE project END, '') AS project,
           meter_name,
           currency,
           sum(cost) FILTER (WHERE period_at >= CAST($month_start AS TIMESTAMP)) AS cost,
           sum(cost) FILTER (WHERE period_at < CAST($month_start AS TIMESTAMP)) AS previous_cost
    FROM usage_rows
    WHERE ($org IS NULL OR organization = $org)
      AND basis = $basis
      AND granularity = $granularity
      AND in_report_month($basis, date, date_processed,
                          CAST($month_start AS TIMESTAMP) - INTERVAL 1 MONTH, CAST($month_start AS TIMESTAMP) + INTERVAL 1 MONTH)
    GROUP BY ALL
),
ranked AS (
    SELECT *,
           coalesce(cost, 0) - coalesce(previous_cost, 0) AS change,
           row_number() OVER (PARTITION BY currency
                              ORDER BY abs(coalesce(cost, 0) - coalesce(previous_cost, 0)) DESC, project NULLS LAST, meter_name) AS rank
    FROM pairs
    WHERE coalesce(cost, 0) <> coalesce(previous_cost, 0)
)
SELECT currency,
       rank,
       project,
       meter_name,
       CAST(coalesce(previous_cost, 0) AS VARCHAR) AS previous_cost,
       CAST(coalesce(cost, 0) AS VARCHAR) AS cost,
       CAST(change AS VARCHAR) AS change
FROM ranked
WHERE rank <= 5
ORDER BY currency, rank;
