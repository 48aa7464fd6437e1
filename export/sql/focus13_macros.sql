-- The pieces the FOCUS 1.3 queries (focus13_cost_and_usage.sql,
-- focus13_contract_commitment.sql) use more than once, as macros of the
-- export's connection: temporary, so that they are created on a read-only
-- copy too, and gone when the export ends. A macro is expanded where it
-- is used, so the queries plan as if its text were written out.

-- tally_json_string is the JSON string of the text e (null when e is):
-- backslash, quote, newline, return and tab escaped. Other control
-- characters do not occur in the ids and units it quotes; one that did
-- would make invalid JSON, which focuscheck reports.
CREATE OR REPLACE TEMP MACRO tally_json_string(e) AS
    '"' || replace(replace(replace(replace(replace(e, '\', '\\'), '"', '\"'), chr(10), '\n'), chr(13), '\r'), chr(9), '\t') || '"';

-- tally_focus_alloc_key is the key of a shared charge in
-- tally_focus_alloc (focus13_alloc.sql): organization, month (YYYY-MM),
-- currency, project, meter, family, payment method and paid-as, the charge
-- of allocation_charges.
CREATE OR REPLACE TEMP MACRO tally_focus_alloc_key(org, month, currency, project, meter, family, payment_method, paid_as) AS
    concat_ws(chr(31), coalesce(org, ''), coalesce(month, ''), coalesce(currency, ''), coalesce(project, ''),
              coalesce(meter, ''), coalesce(family, ''), coalesce(payment_method, ''), coalesce(paid_as, ''));

-- tally_focus_commitment_id is the Contract Commitment id of the
-- entitlement ent drawn in currency: the entitlement's id, followed by "/"
-- and the currency when the entitlement is drawn in several
-- (tally_focus_contracts), as ContractCommitmentId must be unique.
CREATE OR REPLACE TEMP MACRO tally_focus_commitment_id(ent, currency) AS
    ent || CASE WHEN map_extract_value(getvariable('tally_focus_contracts'), ent).currencies > 1 THEN '/' || currency ELSE '' END;

-- tally_focus_part is part n of the value v of a charge split into the
-- parts ps (tally_focus_alloc): v times the part's ratio, rounded to 12
-- decimals; the first part takes what the others leave, so the parts add
-- up to v.
CREATE OR REPLACE TEMP MACRO tally_focus_part(v, ps, n) AS
    CASE WHEN n = 1 THEN v - coalesce(list_sum(list_transform(ps[2:], q -> CAST(v * q.ratio AS DECIMAL(38, 12)))), 0)
         ELSE CAST(v * ps[n].ratio AS DECIMAL(38, 12)) END;

-- tally_focus_split is the cost or quantity v of a row as split cost
-- allocation gives it: part n of it on a charge a rule splits (ps not
-- null), else v.
CREATE OR REPLACE TEMP MACRO tally_focus_split(v, ps, n) AS
    CAST(CASE WHEN ps IS NULL THEN v ELSE tally_focus_part(v, ps, n) END AS DECIMAL(38, 12));

-- tally_focus_split_priced is tally_focus_split for ListCost and
-- ContractedCost: they stay their unit price times the part's
-- PricingQuantity, as FOCUS requires, where they are that on the origin;
-- so their parts add up to the origin's within the rounding of 12
-- decimals, where the others add up exactly.
CREATE OR REPLACE TEMP MACRO tally_focus_split_priced(v, unit_price, quantity, charge_class, ps, n) AS
    CAST(CASE WHEN ps IS NULL THEN v
              WHEN charge_class IS DISTINCT FROM 'Correction' AND unit_price IS NOT NULL AND quantity IS NOT NULL
                  THEN CAST(unit_price * (tally_focus_part(quantity, ps, n)) AS DECIMAL(38, 12))
              ELSE tally_focus_part(v, ps, n) END AS DECIMAL(38, 12));
