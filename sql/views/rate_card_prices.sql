-- rate_card_prices: one row per rate card price (and per location price),
-- from each payment method's latest snapshot.
CREATE OR REPLACE VIEW rate_card_prices AS
SELECT r.* EXCLUDE (snapshot_at, run_id), r.snapshot_at
FROM rate_card_price_snapshots r
WHERE r.snapshot_at = (SELECT max(snapshot_at) FROM rate_card_price_snapshots);
