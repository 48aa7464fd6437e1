-- FOCUS 1.3 Cost and Usage: the rows of f, the focus view's rows (the 1.2
-- mapping) of the export's granularity and basis (and, for a ranged
-- export, of its months), as FOCUS 1.3 has them. It reads the session
-- variables of focus13_org.sql, focus13_contracts.sql and focus13_alloc.sql
-- and the macros of focus13_macros.sql, which must be set.
SELECT
    AllocatedMethodDetails, AllocatedMethodId, AllocatedResourceId, AllocatedResourceName, AllocatedTags,
    BilledCost,
    coalesce(nullif(map_extract_value(getvariable('tally_focus_org'), x_Organization).id, ''), 'unassigned') AS BillingAccountId,
    coalesce(nullif(map_extract_value(getvariable('tally_focus_org'), x_Organization).name, ''), nullif(x_Organization, '')) AS BillingAccountName,
    'Organization' AS BillingAccountType,
    BillingCurrency, BillingPeriodEnd, BillingPeriodStart,
    ChargeCategory, ChargeClass, ChargeDescription, ChargeFrequency, ChargePeriodEnd, ChargePeriodStart,
    CommitmentDiscountCategory, CommitmentDiscountId, CommitmentDiscountName, CommitmentDiscountQuantity,
    CommitmentDiscountStatus, CommitmentDiscountType, CommitmentDiscountUnit,
    ConsumedQuantity, ConsumedUnit,
    -- ContractApplied: the entitlement the charge drew on, as FOCUS's
    -- Elements array: its cost (what the entitlement covered or paid), and
    -- for a usage commitment (license, quantity) its quantity and unit.
    -- Written as text: built with json_object per row, the JSON held its
    -- memory until the COPY ended (out of memory at a year of hourly rows).
    -- Strings go through tally_json_string; decimals are JSON numbers as
    -- they are.
    CASE WHEN CommitmentDiscountId IS NOT NULL THEN
        '{"Elements":[{"ContractID":' || coalesce(tally_json_string(map_extract_value(getvariable('tally_focus_contracts'), CommitmentDiscountId).contract), 'null')
        || ',"ContractCommitmentID":' || tally_json_string(tally_focus_commitment_id(CommitmentDiscountId, BillingCurrency))
        || ',"ContractCommitmentAppliedCost":' || coalesce(CAST(x_Cost AS VARCHAR), 'null')
        || ',"ContractCommitmentAppliedQuantity":' || coalesce(CASE WHEN CommitmentDiscountCategory = 'Usage' THEN CAST(ConsumedQuantity AS VARCHAR) END, 'null')
        || ',"ContractCommitmentAppliedUnit":' || coalesce(CASE WHEN CommitmentDiscountCategory = 'Usage' AND ConsumedQuantity IS NOT NULL THEN tally_json_string(ConsumedUnit) END, 'null')
        || '}]}' END AS ContractApplied,
    ContractedCost, ContractedUnitPrice, EffectiveCost,
    -- HostProviderName: the platform runs its services on its own
    -- infrastructure and names no other host.
    ProviderName AS HostProviderName,
    InvoiceIssuerName, ListCost, ListUnitPrice, PricingCategory, PricingQuantity, PricingUnit,
    ProviderName, PublisherName, RegionId, RegionName, ServiceCategory, ServiceName,
    ProviderName AS ServiceProviderName,
    SkuId, SkuMeter, SkuPriceDetails, SkuPriceId, SubAccountId, SubAccountName, SubAccountType,
    -- x_AllocationOrigin…: set on an allocated charge: the origin charge it
    -- was split from and the origin's costs, so a reader (and focuscheck)
    -- sees that the allocated charges sum to it.
    x_AllocationOriginBilledCost, x_AllocationOriginEffectiveCost, x_AllocationOriginId,
    x_Basis, x_Cost, x_DateProcessed, x_EntitlementId, x_EntitlementType, x_Family, x_FetchedAt,
    x_Granularity, x_Organization, x_PaidAs,
    -- x_PaymentMethod…: the payment method the charge was billed to (the
    -- 1.2 export's billing account).
    nullif(BillingAccountId, 'unassigned') AS x_PaymentMethodId,
    BillingAccountName AS x_PaymentMethodName,
    nullif(BillingAccountType, 'Unknown') AS x_PaymentMethodType,
    x_PriceMatchedBy, x_RateCardSnapshotAt, x_RunId, x_Solution, x_Unit
-- Split cost allocation: a row of a charge a sharing rule splits
-- (tally_focus_alloc: its organization, month, currency, project, meter,
-- family, payment method and paid-as) becomes one row per receiving cost
-- centre, its costs and quantities times the ratio (to 12 decimals, the
-- remainder on the first part so the parts sum to the row exactly), the
-- allocated columns set and x_AllocationOrigin… naming the row it was
-- split from. Looked up per row and unnested, not joined, so the rows
-- stream (see focus13Lookups). Every other row is as the focus view has it.
FROM (
    SELECT * EXCLUDE (parts, i) REPLACE (
        tally_focus_split(BilledCost, parts, i) AS BilledCost,
        tally_focus_split(EffectiveCost, parts, i) AS EffectiveCost,
        tally_focus_split(x_Cost, parts, i) AS x_Cost,
        tally_focus_split(ConsumedQuantity, parts, i) AS ConsumedQuantity,
        tally_focus_split(PricingQuantity, parts, i) AS PricingQuantity,
        tally_focus_split(CommitmentDiscountQuantity, parts, i) AS CommitmentDiscountQuantity,
        tally_focus_split_priced(ListCost, ListUnitPrice, PricingQuantity, ChargeClass, parts, i) AS ListCost,
        tally_focus_split_priced(ContractedCost, ContractedUnitPrice, PricingQuantity, ChargeClass, parts, i) AS ContractedCost),
           CASE WHEN parts IS NOT NULL THEN
               '{"Elements":[{"AllocatedRatio":' || CAST(parts[i].ratio AS VARCHAR)
               || CASE WHEN parts[i].quantity IS NOT NULL THEN ',"UsageUnit":' || coalesce(tally_json_string(parts[i].unit), '"Units"') || ',"UsageQuantity":' || CAST(parts[i].quantity AS VARCHAR) ELSE '' END
               || ',"x_Method":' || tally_json_string(parts[i].method) || ',"x_Rule":' || tally_json_string(parts[i].version) || '}]}'
           END AS AllocatedMethodDetails,
           CASE WHEN parts IS NOT NULL THEN parts[i].version || ' ' || parts[i].method END AS AllocatedMethodId,
           parts[i].cost_centre AS AllocatedResourceId,
           parts[i].cost_centre AS AllocatedResourceName,
           CASE WHEN parts IS NOT NULL THEN '{"tally/cost-centre":' || tally_json_string(parts[i].cost_centre) || '}' END AS AllocatedTags,
           -- the origin row's costs (the columns as read, not as replaced)
           -- and its id: the hash of what tells usage rows apart
           CASE WHEN parts IS NOT NULL THEN BilledCost END AS x_AllocationOriginBilledCost,
           CASE WHEN parts IS NOT NULL THEN EffectiveCost END AS x_AllocationOriginEffectiveCost,
           CASE WHEN parts IS NOT NULL THEN md5(CAST(row(x_Organization, x_Basis, x_Granularity, ChargePeriodStart, x_DateProcessed, BillingCurrency,
               BillingAccountId, SubAccountId, SkuId, SkuMeter, x_Family, x_PaidAs, x_EntitlementId, x_RunId, x_FetchedAt, x_Cost, ConsumedQuantity) AS VARCHAR)) END AS x_AllocationOriginId
    FROM (
        SELECT *, unnest(CASE WHEN parts IS NULL THEN [0] ELSE range(1, len(parts) + 1) END) AS i
        FROM (
            -- the month a charge is billed in: date_processed's for basis
            -- reported, else the charge period's (in UTC, as
            -- make_timestamp(epoch_us(…)) gives it without ICU's calendar)
            SELECT *, map_extract_value(getvariable('tally_focus_alloc'), tally_focus_alloc_key(x_Organization,
                strftime(CASE WHEN x_Basis = 'reported' THEN x_DateProcessed ELSE make_timestamp(epoch_us(ChargePeriodStart)) END, '%Y-%m'),
                BillingCurrency, SubAccountId, SkuMeter, x_Family, nullif(BillingAccountId, 'unassigned'), x_PaidAs)) AS parts
            FROM f
        )
    )
) f
