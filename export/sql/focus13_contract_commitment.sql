-- FOCUS 1.3 Contract Commitment: the commitments the rows of f (as in
-- focus13_cost_and_usage.sql) drew on, one per entitlement and currency,
-- each under its contract (tally_focus_contracts), so every
-- ContractApplied element of Cost and Usage names one of them.
--
-- The interface never states what was bought: a commitment's amount (and
-- its own period) come from the config's commitments
-- (tally_focus_configured), from the entry naming its entitlement for the
-- day of its last charge, when that entry is of the commitment's category
-- (spend for Spend, usage for Usage) and, for spend, of its currency;
-- otherwise they are null, and x_CommitmentSource says why.
WITH pm AS (
    SELECT id, display_name, type, start_date, end_date, created FROM payment_methods
),
commitments AS (
    -- per currency: an entitlement drawn in two is two commitments
    SELECT CommitmentDiscountId AS entitlement,
           tally_focus_commitment_id(CommitmentDiscountId, BillingCurrency) AS commitment_id,
           any_value(CommitmentDiscountCategory) AS category,
           any_value(CommitmentDiscountType) AS type,
           BillingCurrency AS currency,
           min(ChargePeriodStart) AS first_charge,
           max(ChargePeriodStart) AS last_charge_start,
           max(ChargePeriodEnd) AS last_charge,
           max(BillingPeriodEnd) AS last_period_end,
           sum(x_Cost) AS applied_cost,
           -- what the rows drew, by the macro commitment_draw (focus's
           -- CommitmentDiscountQuantity), as the workbook's Commitments sheet
           -- sums it: never a second rule
           CASE WHEN any_value(CommitmentDiscountCategory) = 'Usage' THEN sum(CommitmentDiscountQuantity) END AS applied_quantity,
           CASE WHEN any_value(CommitmentDiscountCategory) = 'Usage' THEN min(ConsumedUnit) END AS applied_unit,
           count(DISTINCT ConsumedUnit) AS units
    FROM f
    WHERE CommitmentDiscountId IS NOT NULL
    GROUP BY CommitmentDiscountId, BillingCurrency
)
SELECT
    c.currency AS BillingCurrency,
    c.category AS ContractCommitmentCategory,
    CASE WHEN n.named AND k.category = 'Spend' THEN k.amount END AS ContractCommitmentCost,
    c.type || ' entitlement ' || c.entitlement || ' on payment method ' || coalesce(nullif(pm.display_name, ''), c.contract_id)
        || CASE WHEN c.commitment_id <> c.entitlement THEN ', drawn in ' || c.currency END AS ContractCommitmentDescription,
    c.commitment_id AS ContractCommitmentId,
    CASE WHEN n.named THEN k.period_end ELSE p.period_end END AS ContractCommitmentPeriodEnd,
    CASE WHEN n.named THEN k.period_start ELSE p.period_start END AS ContractCommitmentPeriodStart,
    CASE WHEN n.named AND k.category = 'Usage' THEN k.quantity END AS ContractCommitmentQuantity,
    c.type AS ContractCommitmentType,
    CASE WHEN n.named AND k.category = 'Usage' THEN k.unit END AS ContractCommitmentUnit,
    c.contract_id AS ContractId,
    p.period_end AS ContractPeriodEnd,
    p.period_start AS ContractPeriodStart,
    -- What the usage drew from the entitlement so far: the cost, and for
    -- a usage commitment the quantity.
    c.applied_cost AS x_AppliedCost,
    -- A quantity only in one unit: quantities of several units do not add.
    CASE WHEN c.units = 1 THEN c.applied_quantity END AS x_AppliedQuantity,
    CASE WHEN c.units = 1 THEN c.applied_unit END AS x_AppliedUnit,
    CASE WHEN n.named THEN k.name END AS x_CommitmentName,
    -- Where the amount comes from ("config: …"), or why there is none
    -- ("none: …"); the manifest lists it per commitment.
    CASE WHEN n.named THEN 'config: ' || k.path || coalesce(' (' || k.name || ')', '') || ', ' || CAST(k.first_day AS VARCHAR) || ' to ' || CAST(k.last_day AS VARCHAR)
         WHEN k.path IS NOT NULL AND k.category <> c.category
             THEN 'none: config ' || k.path || ' names a ' || lower(k.category) || ' commitment; the interface types entitlement '
                  || c.entitlement || ' ' || c.type || ', a ' || c.category || ' commitment'
         WHEN k.path IS NOT NULL
             THEN 'none: config ' || k.path || ' names a spend commitment in ' || k.currency || '; this one is drawn in ' || c.currency
         WHEN c.entitlement IN (SELECT entitlement FROM tally_focus_configured)
             THEN 'none: config names entitlement ' || c.entitlement || ' for other periods than the day of its last charge, '
                  || strftime(timezone('UTC', c.last_charge_start), '%Y-%m-%d')
         ELSE 'none: config names no commitment for entitlement ' || c.entitlement END AS x_CommitmentSource,
    p.open_start AS x_ContractPeriodOpenStart,
    p.open_end AS x_ContractPeriodOpenEnd,
    c.first_charge AS x_FirstChargePeriodStart,
    c.last_charge AS x_LastChargePeriodEnd,
    nullif(pm.display_name, '') AS x_PaymentMethodName,
    nullif(pm.type, '') AS x_PaymentMethodType,
    strftime(timezone('UTC', p.period_start), '%Y-%m') AS start_month
FROM (SELECT *, map_extract_value(getvariable('tally_focus_contracts'), entitlement).contract AS contract_id FROM commitments) c
LEFT JOIN pm ON pm.id = c.contract_id
CROSS JOIN LATERAL (
    SELECT coalesce(CAST(pm.start_date AS TIMESTAMP), CAST(CAST(pm.created AS DATE) AS TIMESTAMP), timezone('UTC', c.first_charge)) AT TIME ZONE 'UTC' AS period_start,
           coalesce(CAST(pm.end_date AS TIMESTAMP), timezone('UTC', c.last_period_end)) AT TIME ZONE 'UTC' AS period_end,
           pm.start_date IS NULL AS open_start,
           pm.end_date IS NULL AS open_end
) p
-- the config's entry for the day of the commitment's last charge (at most
-- one: the config refuses overlapping entries of one entitlement)
LEFT JOIN (
    SELECT *, CAST(first_day AS TIMESTAMP) AT TIME ZONE 'UTC' AS period_start,
           CAST(last_day + 1 AS TIMESTAMP) AT TIME ZONE 'UTC' AS period_end
    FROM tally_focus_configured
) k ON k.entitlement = c.entitlement AND k.period_start <= c.last_charge_start AND c.last_charge_start < k.period_end
CROSS JOIN LATERAL (
    SELECT coalesce(k.category = c.category AND (k.category = 'Usage' OR k.currency = c.currency), false) AS named
) n
