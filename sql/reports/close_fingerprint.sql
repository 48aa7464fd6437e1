-- close_fingerprint: a content hash over the report month's rows as the
-- workbook reads them (month_usage), for month_closes.content_hash: sha256
-- of every row's fields, one line a row, in a fixed order. run_id and
-- fetched_at are left out: fetching the same rows again must not change
-- the fingerprint, only a change of what the interface says should.
--
-- Parameters: $basis, $granularity, $month_start, $month_end (exclusive).
SELECT count(*) AS rows,
       sha256(coalesce(string_agg(line, chr(10) ORDER BY line), '')) AS content_hash
FROM (
    SELECT concat_ws(chr(9), granularity, basis, CAST(date AS VARCHAR), coalesce(CAST(date_processed AS VARCHAR), ''),
                     meter_name, coalesce(meter_sku, ''), coalesce(family, ''), coalesce(solution, ''), coalesce(unit, ''),
                     CAST(quantity AS VARCHAR), coalesce(CAST(price AS VARCHAR), ''), CAST(cost AS VARCHAR), currency,
                     coalesce(entitlement, ''), coalesce(entitlement_type, ''), coalesce(payment_method, ''),
                     coalesce(payment_method_name, ''), coalesce(project, '')) AS line
    FROM month_usage
) rows_as_text;
