-- rate_card_prices: one row per rate card price (and per location price),
-- from each payment method's latest snapshot.
--
-- Per payment method, not the table's latest snapshot as a whole: a run
-- that could not fetch one card must not make that card vanish from the
-- reports.
CREATE OR REPLACE VIEW rate_card_prices AS
SELECT r.* EXCLUDE (snapshot_at, run_id), r.snapshot_at
FROM rate_card_price_snapshots r
WHERE r.snapshot_at = (
    SELECT max(s.snapshot_at)
    FROM rate_card_price_snapshots s
    WHERE s.organization = r.organization AND s.payment_method_id = r.payment_method_id
);
