-- paid_as_of: how the cost of a usage row with entitlement_type and
-- entitlement is paid: 'direct', 'balance', 'license' or 'other', as
-- usage_rows (whose paid_as it is) describes them. The one place this rule
-- lives: the load's daily totals apply it to each usage key as well.
-- Entitlement types are compared lowercased with non-letters dropped, so
-- "PreCommitment", "pre-commitment" and "Pre Commitment" are one type.
CREATE OR REPLACE MACRO paid_as_of(entitlement_type, entitlement) AS
    CASE
        -- the types as the interface spells them first: trim and lower
        -- cost more than the rest of the row (a trim of 24M rows, 1.5 s)
        WHEN entitlement_type = 'license' THEN 'license'
        WHEN entitlement_type IN ('cash', 'quantity', 'preCommitment', 'pre-commitment') THEN 'balance'
        WHEN entitlement_type IS NULL AND entitlement IS NULL THEN 'direct'
        WHEN nullif(trim(entitlement_type), '') IS NULL THEN
            CASE WHEN nullif(trim(entitlement), '') IS NULL THEN 'direct' ELSE 'other' END
        -- the type as most rows send it, without the regular expression
        WHEN lower(entitlement_type) = 'license' THEN 'license'
        WHEN lower(entitlement_type) IN ('cash', 'quantity', 'precommitment') THEN 'balance'
        ELSE CASE regexp_replace(lower(entitlement_type), '[^a-z]', '', 'g')
                 WHEN 'license' THEN 'license'
                 WHEN 'cash' THEN 'balance'
                 WHEN 'quantity' THEN 'balance'
                 WHEN 'precommitment' THEN 'balance'
                 ELSE 'other'
             END
    END;
