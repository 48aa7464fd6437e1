-- commitment_category: the FOCUS commitment category a usage row with
-- entitlement_type and entitlement draws on: 'Usage' for a license or
-- quantity entitlement (a quantity of units), 'Spend' for cash and
-- pre-commitment (an amount of money); NULL without an entitlement, or of
-- a type Tally does not know (no honest category: never claimed as a
-- commitment). The one place this rule lives: focus's commitment columns
-- and the workbook's Commitments sheet and the commitment alert
-- (store.CommitmentDraws) both call it, so what FOCUS 1.3 says was drawn
-- from a commitment and what the workbook says never disagree. Types are
-- compared as paid_as_of compares them (lowercased, non-letters dropped),
-- the interface's own spellings first, without the regular expression.
CREATE OR REPLACE MACRO commitment_category(entitlement_type, entitlement) AS
    CASE
        WHEN nullif(entitlement, '') IS NULL OR entitlement_type IS NULL THEN NULL
        WHEN entitlement_type IN ('license', 'quantity') THEN 'Usage'
        WHEN entitlement_type IN ('cash', 'preCommitment', 'pre-commitment') THEN 'Spend'
        ELSE CASE regexp_replace(lower(entitlement_type), '[^a-z]', '', 'g')
                 WHEN 'license' THEN 'Usage'
                 WHEN 'quantity' THEN 'Usage'
                 WHEN 'cash' THEN 'Spend'
                 WHEN 'precommitment' THEN 'Spend'
             END
    END;
