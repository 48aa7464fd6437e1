-- usage_rows: every usage row with two columns derived from it: period_at,
-- when it counts on its basis (date, when it happened, for basis usage;
-- date_processed, when it was charged, for basis reported), and paid_as,
-- how its cost is paid: 'direct' (no entitlement: billed on the invoice),
-- 'balance' (a cash, quantity or pre-commitment entitlement draws it from
-- a prepaid balance), 'license' (a license entitlement covers it, nothing
-- billed) or 'other' (an entitlement of a type Tally does not know, or of
-- none: shown as sent and counted as billed, never guessed).
--
-- Streaming usage charged to a payment method with
-- autoPurchaseStreamLicenses true is, per the interface, billed through
-- monthly charges rather than by the minute; the interface does not say
-- how, so its cost is counted here as sent, like any row, and only shown:
-- usage_validity marks it (streaming_auto_purchase), the workbook lists it
-- on Flags and By payment method.
--
-- This is where the workbook, focus and the other views read these rules;
-- paid_as is the macro paid_as_of's.
CREATE OR REPLACE VIEW usage_rows AS
SELECT *,
       CASE WHEN basis = 'reported' THEN date_processed ELSE date END AS period_at,
       paid_as_of(entitlement_type, entitlement) AS paid_as
FROM usage;
