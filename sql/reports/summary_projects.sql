-- summary_projects: the report month's usage value per currency of its
-- largest projects (month_paid_by's project totals, as By project shows
-- them), most first, the sixth and later summed into one line saying how
-- many projects it holds: the Summary's bar chart by project. Exact, never
-- across currencies; the lines of a currency add up to its total.
--
-- Parameters: $basis, $granularity, $month_start, $month_end (exclusive),
-- $org, $group.
WITH p AS (
    SELECT project, currency, CAST(total AS DECIMAL(38, 12)) AS cost
    FROM month_paid_by
    WHERE level = 'project'
),
ranked AS (
    SELECT *,
           row_number() OVER (PARTITION BY currency ORDER BY cost DESC NULLS LAST, project NULLS LAST) AS rank
    FROM p
)
SELECT currency, rank, false AS others, project, 1 AS projects, CAST(cost AS VARCHAR) AS cost
FROM ranked
WHERE rank < 6
UNION ALL
SELECT currency, 6, true, NULL, count(*), CAST(sum(cost) AS VARCHAR)
FROM ranked
WHERE rank >= 6
GROUP BY currency
ORDER BY currency, rank;
