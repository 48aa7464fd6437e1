-- tally_focus_contracts: the contract of each commitment of the export's
-- granularity ($1) and basis ($2), and in how many currencies it is drawn
-- (see focus13Lookups). A commitment is an entitlement of a known type (the
-- focus view's commitment discounts); its contract is the payment method
-- it was charged under, the first should one entitlement appear under two,
-- so that it has exactly one parent. An entitlement drawn in several
-- currencies (the interface gives a currency per row) is one commitment
-- per currency (tally_focus_commitment_id), so that no amount adds one
-- currency to another; currencies counts them.
SET VARIABLE tally_focus_contracts = (
SELECT map_from_entries(coalesce(list((commitment_id, {'contract': contract_id, 'currencies': currencies})), []))
FROM (
    SELECT entitlement AS commitment_id,
           min(coalesce(nullif(payment_method, ''), 'unassigned')) AS contract_id,
           count(DISTINCT currency) AS currencies
    FROM usage
    WHERE granularity = $1 AND basis = $2 AND nullif(entitlement, '') IS NOT NULL
      -- the types as the interface spells them first, as the focus view
      -- does: the regular expression on every row of the history was half
      -- of this pass
      AND (entitlement_type IN ('license', 'cash', 'quantity') OR entitlement_type IN ('preCommitment', 'pre-commitment')
           OR regexp_replace(lower(coalesce(entitlement_type, '')), '[^a-z]', '', 'g') IN ('license', 'quantity', 'cash', 'precommitment'))
    GROUP BY entitlement
))
