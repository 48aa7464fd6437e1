-- freshness: how recent the data is: when a window was last fetched, the
-- latest usage bucket loaded, and the latest charge (date_processed) seen.
--
-- `tally status` reads this query by position: keep its columns and their
-- order.
SELECT (SELECT max(fetched_at) FROM fetch_windows) AS last_fetched_at,
       (SELECT max(date) FROM usage) AS latest_usage_date,
       (SELECT max(date_processed) FROM usage) AS latest_date_processed;
