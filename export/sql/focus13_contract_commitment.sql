-- FOCUS 1.3 Contract Commitment: the commitments the rows of f (as in
-- focus13_cost_and_usage.sql) drew on, one per entitlement and currency,
-- each under its contract (tally_focus_contracts), so every
-- ContractApplied element of Cost and Usage names one of them.
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
           max(ChargePeriodEnd) AS last_charge,
           max(BillingPeriodEnd) AS last_period_end,
           sum(x_Cost) AS applied_cost,
           CASE WHEN any_value(CommitmentDiscountCategory) = 'Usage' THEN sum(ConsumedQuantity) END AS applied_quantity,
           CASE WHEN any_value(CommitmentDiscountCategory) = 'Usage' THEN min(ConsumedUnit) END AS applied_unit,
           count(DISTINCT ConsumedUnit) AS units
    FROM f
    WHERE CommitmentDiscountId IS NOT NULL
    GROUP BY CommitmentDiscountId, BillingCurrency
)
SELECT
    c.currency AS BillingCurrency,
    c.category AS ContractCommitmentCategory,
    CAST(NULL AS DECIMAL(38, 12)) AS ContractCommitmentCost,
    c.type || ' entitlement ' || c.entitlement || ' on payment method ' || coalesce(nullif(pm.display_name, ''), c.contract_id)
        || CASE WHEN c.commitment_id <> c.entitlement THEN ', drawn in ' || c.currency END AS ContractCommitmentDescription,
    c.commitment_id AS ContractCommitmentId,
    p.period_end AS ContractCommitmentPeriodEnd,
    p.period_start AS ContractCommitmentPeriodStart,
    CAST(NULL AS DECIMAL(38, 12)) AS ContractCommitmentQuantity,
    c.type AS ContractCommitmentType,
    CAST(NULL AS VARCHAR) AS ContractCommitmentUnit,
    c.contract_id AS ContractId,
    p.period_end AS ContractPeriodEnd,
    p.period_start AS ContractPeriodStart,
    -- What the usage drew from the entitlement so far (its amount is not
    -- in the interface): the cost, and for a usage commitment the quantity.
    c.applied_cost AS x_AppliedCost,
    -- A quantity only in one unit: quantities of several units do not add.
    CASE WHEN c.units = 1 THEN c.applied_quantity END AS x_AppliedQuantity,
    CASE WHEN c.units = 1 THEN c.applied_unit END AS x_AppliedUnit,
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
