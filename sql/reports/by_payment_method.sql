-- by_payment_method: what the report month's usage is worth per payment
-- method and currency, with the method as it stood that month: name, type,
-- sales order number or marketplace ids (read from the spec JSON: every
-- spec field whose name ends in Id or Code, whatever the variant is called),
-- validity dates, whether it is active and its terms accepted,
-- autoPurchaseStreamLicenses (true: streaming is billed through monthly
-- charges, not by the minute; shown, the sums are the usage as sent) and
-- the projects it bills.
--
-- "As it stood that month" is payment_methods_by_month's. Usage with no payment method is one row with NULL details.
--
-- Parameters: $basis, $granularity, $month_start, $month_end (exclusive).
WITH billed AS (
    SELECT organization,
           nullif(payment_method, '') AS payment_method,
           currency,
           min(nullif(payment_method_name, '')) AS usage_name,
           list_sort(list_distinct(list(nullif(project, '')))) AS usage_projects,
           count(*) AS rows,
           sum(cost) AS cost
    FROM month_usage
    GROUP BY organization, nullif(payment_method, ''), currency
),
pm AS (
    SELECT *
    FROM payment_methods_by_month
    WHERE month = CAST($month_start AS DATE)
)
SELECT b.payment_method,
       coalesce(nullif(pm.display_name, ''), b.usage_name) AS name,
       pm.type,
       coalesce(nullif(pm.sales_order_number, ''),
                nullif(json_extract_string(pm.spec, '$.salesOrderNumber'), '')) AS sales_order_number,
       array_to_string(
           list_transform(
               list_sort(list_filter(
                   json_keys(pm.spec),
                   k -> regexp_matches(k, '(Id|ID|Code)$')
                        AND nullif(json_extract_string(pm.spec, '$."' || k || '"'), '') IS NOT NULL)),
               k -> k || ': ' || json_extract_string(pm.spec, '$."' || k || '"')),
           '; ') AS marketplace_ids,
       pm.start_date,
       pm.end_date,
       pm.is_active,
       pm.terms_and_conditions_accepted,
       pm.auto_purchase_stream_licenses,
       array_to_string(list_sort(pm.projects), ', ') AS projects,
       array_to_string(b.usage_projects, ', ') AS usage_projects,
       pm.snapshot_at,
       b.currency,
       b.rows,
       CAST(b.cost AS VARCHAR) AS cost
FROM billed b
LEFT JOIN pm ON pm.organization = b.organization AND pm.id = b.payment_method
ORDER BY b.payment_method NULLS LAST, b.currency;
