-- focus: the usage as FinOps FOCUS 1.2 cost and usage rows, one per usage
-- row of every granularity and basis loaded; filter on x_Granularity and
-- x_Basis to count each charge once (tally export --format focus keeps the
-- config's usage.granularity and basis).
--
-- A payment method is the billing account, a project the sub-account, an
-- entitlement the commitment discount. Reference data is the snapshot in
-- force for the charge period's month (snapshots_in_force). A meter is priced as rate_card_matches matches it to its
-- payment method's rate card in force; when the match is several prices,
-- or a price in another currency, the row has no list price rather than a
-- guessed one.
--
-- How a row is paid is usage_rows' paid_as, as in the workbook: no
-- entitlement is billed directly; cash, quantity and pre-commitment
-- entitlements draw the cost from a prepaid balance, which was invoiced
-- when it was bought; a license covers the cost in full; an entitlement of
-- any other type, or none, is shown as sent and, as Tally cannot know how
-- it is paid, counted as billed (x_PaidAs 'other').
--
-- A closed month (closed_months) is frozen: its rows of the close's basis
-- and granularity are replaced by one row per project, meter, payment
-- method and currency as it stood at close, billed in the closed month, so
-- a FOCUS consumer's sums for that billing period never move. Late charges
-- loaded afterwards are 'Correction' rows (ChargeClass) billed in the month
-- Tally loaded them (closed_month_adjustments.found_month), with the closed
-- month as their charge period.
--
-- Estimated rows (x_Basis 'estimated', usage.source projects) are
-- quantities priced from the rate card, not anything invoiced: BilledCost
-- 0, the estimate in ListCost, ContractedCost and EffectiveCost.
--
-- Marketplace methods: the marketplace, not the platform, invoices and is
-- paid, so FOCUS 1.2 wants BilledCost 0 wherever InvoiceIssuerName is not
-- ProviderName; the value stays in EffectiveCost, ListCost and
-- ContractedCost. A controller reconciles the marketplace's own invoice
-- with sum(EffectiveCost) of the rows whose InvoiceIssuerName is that
-- marketplace (x_PaidAs says which part was drawn from a balance or
-- licensed), and the platform's invoice with sum(BilledCost).
--
-- Entitlements as commitment discounts: a license covers a predetermined
-- amount of usage (Usage); a quantity entitlement is a prepaid quantity of
-- units (Usage); cash and pre-commitment are a predetermined amount of
-- spend (Spend). An entitlement of a type Tally does not know is not
-- claimed as a commitment discount at all (no honest category), so its
-- commitment columns are null and it shows in x_EntitlementId and
-- x_EntitlementType, with x_PaidAs 'other'.
--
-- Every Usage row has unit prices, as FOCUS requires: the rate card price
-- in force when one matches, else the per-unit price the interface sent,
-- else cost ÷ quantity (to 12 decimals); x_PriceMatchedBy says which. A
-- row whose only price would be negative (a negative charge) is a
-- Correction, whose prices may be null.
--
-- Left out rather than guessed: resource columns and Tags (usage rows
-- carry none), InvoiceId, AvailabilityZone, CommitmentDiscountName (the
-- interface gives entitlements no display name). Custom columns start with
-- x_, as FOCUS asks.
--
-- x_row, a constant, is the union's first column, dropped by the outer
-- select: a query that reads no column of a union (a count) still has
-- DuckDB compute the first one of every row, and BilledCost, first in
-- FOCUS's order, joins each row to its payment method.
CREATE OR REPLACE VIEW focus AS
SELECT * EXCLUDE (x_row) FROM (
WITH u AS (
    -- The period columns are worked out here, on the usage row, rather
    -- than in the last step: an analyst's condition on them then reaches
    -- the usage table's scan, ahead of the joins, instead of being
    -- judged on every row after them (a month of 24 read at a seventh of
    -- the cost).
    SELECT *,
           -- make_timestamptz(epoch_us(t)) is t AT TIME ZONE 'UTC', read as
           -- a UTC instant without ICU's calendar: 0.3 s of CPU for 24M
           -- rows instead of 4.8.
           make_timestamptz(epoch_us(date)) AS charge_period_start,
           make_timestamptz(epoch_us(date_trunc('month', coalesce(date_processed, date)))) AS billing_period_start,
           make_timestamptz(epoch_us(date_trunc('month', coalesce(date_processed, date)) + INTERVAL 1 MONTH)) AS billing_period_end
    FROM usage_rows ur
),
priced AS (
    SELECT organization,
           CAST(month AS TIMESTAMP) AS charge_month,
           payment_method_id AS pm_key,
           meter_name,
           coalesce(meter_sku, '') AS sku_key,
           matched_by,
           price AS card_price,
           currency AS card_currency,
           price_name,
           price_display_name,
           price_unit,
           -- the price's unit in FOCUS unit format (as ConsumedUnit), once
           -- per price rather than on every row it prices
           focus_unit(price_unit) AS pricing_unit,
           card_snapshot_at
    FROM rate_card_matches
    WHERE price IS NOT NULL
),
-- What follows from a payment method, a project or its location alone is
-- worked out here, once per snapshot, rather than on each usage row.
pm AS (
    SELECT organization, CAST(month AS TIMESTAMP) AS charge_month, id, display_name, type,
           nullif(type, '') IS NOT NULL AND lower(type) <> 'direct' AS marketplace
    FROM payment_methods_by_month
),
project AS (
    SELECT organization, CAST(month AS TIMESTAMP) AS charge_month, name, display_name, location_name, location_display_name
    FROM projects_by_month
),
-- What follows from a usage row's key (usage_keys: organization, basis,
-- granularity, months of date and of period_at, and every text: payment
-- method, meter, sku, project and the rest) is worked out once per key, not once per row: its month's
-- rate card price, payment method and project, and whether it is of a
-- closed month. Each row joins it on its key_id, one integer; on the texts
-- and dates the key stands for, those joins were most of a count's time
-- (3 of 4 s at 24M rows). Every row has a key: the load numbers its rows,
-- and the writer numbers rows written otherwise (and those of a store from
-- before keys) before anything reads them (store.keyUsage).
kd AS (
    SELECT ky.id,
           ky.basis,
           -- A closed month's rows are shown as they stood at close (the
           -- frozen rows below), so a FOCUS consumer's sums for it never
           -- move.
           EXISTS (SELECT 1 FROM closed_months c
                   WHERE c.organization = ky.organization AND c.basis = ky.basis AND c.granularity = ky.granularity
                     AND ky.period_month >= c.month AND ky.period_month < c.month + INTERVAL 1 MONTH) AS closed,
           pr.matched_by, pr.card_price, pr.card_currency, pr.price_name, pr.price_display_name,
           pr.price_unit, pr.pricing_unit, pr.card_snapshot_at,
           pm.display_name AS pm_display_name,
           pm.type AS pm_type,
           pm.marketplace,
           project.display_name AS project_display_name,
           project.location_name,
           project.location_display_name
    FROM usage_keys ky
    LEFT JOIN priced pr
           ON pr.organization = ky.organization AND pr.charge_month = ky.month AND pr.pm_key = coalesce(ky.payment_method, '')
          AND pr.meter_name = ky.meter_name AND pr.sku_key = coalesce(ky.meter_sku, '')
    LEFT JOIN pm ON pm.organization = ky.organization AND pm.charge_month = ky.month AND pm.id = ky.payment_method
    LEFT JOIN project ON project.organization = ky.organization AND project.charge_month = ky.month AND project.name = ky.project
),
r AS (
    -- The price applies only when its currency is the row's (or unknown).
    -- priced has one row per month, payment method, meter and sku, so that
    -- test here gives what it gave in the join condition, where, reading
    -- both sides, it made the join a nested loop over every row (11 s of 16
    -- at two years of 250,000 rows a month).
    SELECT u.*,
           CAST(u.quantity AS DECIMAL(38, 12)) AS qty,
           CASE WHEN coalesce(kd.card_currency, u.currency) = u.currency THEN kd.matched_by END AS matched_by,
           CASE WHEN coalesce(kd.card_currency, u.currency) = u.currency THEN kd.card_price END AS card_price,
           CASE WHEN coalesce(kd.card_currency, u.currency) = u.currency THEN kd.price_name END AS price_name,
           CASE WHEN coalesce(kd.card_currency, u.currency) = u.currency THEN kd.price_display_name END AS price_display_name,
           CASE WHEN coalesce(kd.card_currency, u.currency) = u.currency THEN kd.price_unit END AS price_unit,
           CASE WHEN coalesce(kd.card_currency, u.currency) = u.currency THEN kd.pricing_unit END AS pricing_unit,
           CASE WHEN coalesce(kd.card_currency, u.currency) = u.currency THEN kd.card_snapshot_at END AS card_snapshot_at,
           kd.pm_display_name,
           kd.pm_type,
           kd.project_display_name,
           kd.location_name,
           kd.location_display_name,
           coalesce(kd.marketplace, false) AS marketplace,
           -- the commitment category the row draws on (Usage, Spend or
           -- NULL): the macro the workbook's Commitments sheet reads too
           commitment_category(u.entitlement_type, u.entitlement) AS commitment_kind,
           -- the type spelled as the interface sends it, untrimmed where
           -- it can be. (An IN list of five or more DuckDB makes a join of
           -- every row.)
           CASE WHEN u.entitlement_type IN ('license', 'cash', 'quantity') OR u.entitlement_type IN ('preCommitment', 'pre-commitment') THEN u.entitlement_type
                ELSE trim(u.entitlement_type)
           END AS ent_type_trimmed
    FROM u
    JOIN kd ON kd.id = u.key_id
    -- An estimated row no rate card price matched has no cost to state:
    -- the workbook flags it; FOCUS, whose cost columns are required,
    -- leaves it out.
    WHERE NOT kd.closed AND NOT (kd.basis = 'estimated' AND u.cost IS NULL)
),
c AS (
    SELECT r.*,
           commitment_kind IS NOT NULL AS commitment,
           CASE WHEN card_price IS NOT NULL THEN matched_by
                WHEN price IS NOT NULL AND price >= 0 THEN 'interface price'
                WHEN qty <> 0 AND CAST(cost AS DOUBLE) / CAST(qty AS DOUBLE) >= 0 THEN 'cost / quantity'
                WHEN qty = 0 AND cost = 0 THEN 'cost / quantity'
           END AS price_source,
           CASE WHEN card_price IS NOT NULL THEN card_price
                WHEN price IS NOT NULL AND price >= 0 THEN CAST(price AS DECIMAL(38, 12))
                WHEN qty <> 0 AND CAST(cost AS DOUBLE) / CAST(qty AS DOUBLE) >= 0 THEN CAST(CAST(cost AS DOUBLE) / CAST(qty AS DOUBLE) AS DECIMAL(38, 12))
                WHEN qty = 0 AND cost = 0 THEN CAST(0 AS DECIMAL(38, 12))
           END AS unit_price,
           focus_unit(coalesce(unit, '')) AS consumed_unit
    FROM r
),
k AS (
    -- quantity × unit price to 12 decimals. The exact product has 24, and
    -- DuckDB's cast back to 12 divides a 128-bit integer bit by bit: 2 µs a
    -- row, 50 s of CPU for a sum of ListCost over 24M rows. The product of
    -- the two as doubles, cast to 12 decimals, is the same number whenever
    -- it lies less than half a unit of the 12th decimal from the exact
    -- product (no other 12-decimal number does); only where it does not (a
    -- tie, a product past a double's precision) is the exact one cast.
    SELECT c.*, qty * unit_price AS cost_exact,
           TRY_CAST(CAST(qty AS DOUBLE) * CAST(unit_price AS DOUBLE) AS DECIMAL(38, 12)) AS cost_near
    FROM c
),
d AS (
    SELECT k.*,
           CASE WHEN unit_price IS NULL THEN cost
                WHEN abs(cost_near - cost_exact) < CAST('0.0000000000005' AS DECIMAL(38, 24)) THEN cost_near
                ELSE CAST(cost_exact AS DECIMAL(38, 12))
           END AS priced_cost
    FROM k
)
SELECT
    true AS x_row,
    -- BilledCost: what the platform's invoice charges for the row: the
    -- interface's cost when billed directly (or under an unknown
    -- entitlement type); 0 when a license covers it or a prepaid balance
    -- pays it, and 0 when a marketplace invoices it (see the header).
    CASE WHEN paid_as IN ('license', 'balance') OR marketplace OR basis = 'estimated' THEN CAST(0 AS DECIMAL(38, 12)) ELSE cost END AS BilledCost,
    -- BillingAccountId: the payment method (a UUID); 'unassigned' for usage
    -- the interface sent without one, as FOCUS allows no null here.
    coalesce(nullif(payment_method, ''), 'unassigned') AS BillingAccountId,
    -- BillingAccountName: the payment method's name on the usage row, else
    -- its display name in the snapshot in force.
    coalesce(nullif(payment_method_name, ''), nullif(pm_display_name, '')) AS BillingAccountName,
    -- BillingAccountType: the payment method's variant (direct or a
    -- marketplace) from the snapshot in force; 'Unknown' without one.
    coalesce(nullif(pm_type, ''), 'Unknown') AS BillingAccountType,
    -- BillingCurrency: the usage row's currency (ISO 4217), never converted.
    currency AS BillingCurrency,
    -- BillingPeriodStart/End: the calendar month (UTC) the row is charged
    -- in: the month of date_processed, else (not charged yet) of date.
    billing_period_start AS BillingPeriodStart,
    billing_period_end AS BillingPeriodEnd,
    -- ChargeCategory: every usage row is 'Usage'.
    'Usage' AS ChargeCategory,
    -- ChargeClass: null for a charge; 'Correction' for a negative charge
    -- (no non-negative unit price can explain it). A late charge is billed
    -- in the month it is charged, not as a correction.
    CASE WHEN unit_price IS NULL THEN 'Correction' END AS ChargeClass,
    -- ChargeDescription: the rate card's name for the price, with the meter.
    coalesce(price_display_name || ' (' || meter_name || ')', meter_name) AS ChargeDescription,
    -- ChargeFrequency: usage is metered.
    'Usage-Based' AS ChargeFrequency,
    -- ChargePeriodStart/End: the usage bucket: date, plus one granularity.
    charge_period_start AS ChargePeriodStart,
    make_timestamptz(epoch_us(date + CASE granularity
                WHEN 'hour' THEN INTERVAL 1 HOUR
                WHEN 'day' THEN INTERVAL 1 DAY
                WHEN 'week' THEN INTERVAL 7 DAY
                WHEN 'month' THEN INTERVAL 1 MONTH
                ELSE INTERVAL 1 YEAR
            END)) AS ChargePeriodEnd,
    -- CommitmentDiscountCategory: Usage for license and quantity
    -- entitlements, Spend for cash and pre-commitment (see the header).
    commitment_kind AS CommitmentDiscountCategory,
    -- CommitmentDiscountId: the entitlement that applied, of a known type.
    CASE WHEN commitment THEN entitlement END AS CommitmentDiscountId,
    -- CommitmentDiscountName: null: the interface gives no display name.
    CAST(NULL AS VARCHAR) AS CommitmentDiscountName,
    -- CommitmentDiscountQuantity: what the row consumed of the commitment:
    -- the metered quantity (Usage), or the usage value (Spend), as the
    -- macro commitment_draw says (the workbook's Commitments sheet sums it).
    commitment_draw(commitment_kind, cost, qty) AS CommitmentDiscountQuantity,
    -- CommitmentDiscountUnit: the unit of CommitmentDiscountQuantity: the
    -- usage unit (Usage), the billing currency (Spend), as FOCUS's own
    -- spend-based examples do.
    CASE commitment_kind WHEN 'Usage' THEN consumed_unit WHEN 'Spend' THEN currency END AS CommitmentDiscountUnit,
    -- CommitmentDiscountStatus: 'Used' where a commitment applied.
    CASE WHEN commitment THEN 'Used' END AS CommitmentDiscountStatus,
    -- CommitmentDiscountType: the entitlement type exactly as sent.
    CASE WHEN commitment THEN ent_type_trimmed END AS CommitmentDiscountType,
    -- ConsumedQuantity: the metered quantity.
    qty AS ConsumedQuantity,
    -- ConsumedUnit: the usage unit in FOCUS unit format (minutes →
    -- Minutes, gigabytes → GB, gigabyte hours → GB-Hours; other units with
    -- their words capitalized); 'Units' when the interface sent none.
    consumed_unit AS ConsumedUnit,
    -- ContractedCost: quantity × the unit price (see the header), rounded
    -- to 12 decimals; the interface's cost for a Correction. The rate card
    -- is the payment method's own (possibly private) offer, so contracted
    -- and list prices are the same here.
    priced_cost AS ContractedCost,
    -- ContractedUnitPrice: the unit price; null only on a Correction.
    unit_price AS ContractedUnitPrice,
    -- EffectiveCost: the amortized cost: the interface's cost, also where
    -- a prepaid balance pays it (this row's share of the prepayment); 0
    -- under a license, whose own fee is not in the usage data.
    CASE WHEN paid_as = 'license' THEN CAST(0 AS DECIMAL(38, 12)) ELSE cost END AS EffectiveCost,
    -- InvoiceIssuerName: the marketplace for a marketplace payment method
    -- (its variant, as the interface names it), else the platform.
    CASE WHEN nullif(pm_type, '') IS NULL OR lower(pm_type) = 'direct' THEN 'Media cloud' ELSE pm_type END AS InvoiceIssuerName,
    -- ListCost, ListUnitPrice: as ContractedCost and ContractedUnitPrice.
    priced_cost AS ListCost,
    unit_price AS ListUnitPrice,
    -- PricingCategory: 'Committed' under a commitment discount, else
    -- 'Standard'; null on a Correction.
    CASE WHEN unit_price IS NULL THEN NULL WHEN commitment THEN 'Committed' ELSE 'Standard' END AS PricingCategory,
    -- PricingQuantity: the metered quantity (usage is priced per unit).
    qty AS PricingQuantity,
    -- PricingUnit: the rate card price's unit, else the usage unit, in
    -- FOCUS unit format as for ConsumedUnit.
    coalesce(pricing_unit, consumed_unit) AS PricingUnit,
    -- ProviderName, PublisherName: the platform that sells and makes the
    -- services; a constant, as the interface does not name itself.
    'Media cloud' AS ProviderName,
    'Media cloud' AS PublisherName,
    -- RegionId, RegionName: the location the project's resources are in
    -- (its project snapshot in force for the month) and its display name;
    -- null for a project with none.
    location_name AS RegionId,
    CASE WHEN location_name IS NOT NULL THEN coalesce(nullif(location_display_name, ''), location_name) END AS RegionName,
    -- ServiceCategory: 'Storage' for the storage solution, 'Media' (media
    -- streaming and processing) for everything else the platform sells.
    CASE WHEN lower(trim(coalesce(solution, ''))) = 'storage' THEN 'Storage' ELSE 'Media' END AS ServiceCategory,
    -- ServiceName: the solution (Encoding, Streaming, …), else the family,
    -- else the meter.
    coalesce(nullif(solution, ''), nullif(family, ''), meter_name) AS ServiceName,
    -- SkuId: the meter's sku, else (the interface sent none) the meter name.
    coalesce(nullif(meter_sku, ''), meter_name) AS SkuId,
    -- SkuMeter: the meter name.
    meter_name AS SkuMeter,
    -- SkuPriceId: the matched rate card price's name (names, comma
    -- separated, when one price is listed under several), the same on every
    -- payment method's card; the SkuId where no price matched.
    CASE WHEN unit_price IS NOT NULL THEN coalesce(price_name, nullif(meter_sku, ''), meter_name) END AS SkuPriceId,
    -- SkuPriceDetails: the rate card entry the price is listed under, as
    -- FOCUS key-value JSON (x_ keys: none is FOCUS-defined); null when no
    -- rate card price matched.
    CASE WHEN card_price IS NOT NULL THEN
        CAST(json_object('x_Family', family, 'x_Solution', solution, 'x_PriceName', price_name, 'x_PricingUnit', price_unit) AS VARCHAR)
    END AS SkuPriceDetails,
    -- SubAccountId: the project name (the project's key in the interface).
    nullif(project, '') AS SubAccountId,
    -- SubAccountName: the project's display name in the snapshot in force,
    -- else its name.
    CASE WHEN nullif(project, '') IS NOT NULL THEN coalesce(nullif(project_display_name, ''), project) END AS SubAccountName,
    -- SubAccountType: 'Project' for every sub-account.
    CASE WHEN nullif(project, '') IS NOT NULL THEN 'Project' END AS SubAccountType,
    -- x_Basis, x_Granularity: which load the row comes from (usage or
    -- reported; hour … year): filter on them to count a charge once.
    basis AS x_Basis,
    granularity AS x_Granularity,
    -- x_Cost: the cost exactly as the interface sent it, whoever pays it.
    cost AS x_Cost,
    -- x_EntitlementId, x_EntitlementType: the entitlement as sent, of any
    -- type (a known one is also the commitment discount).
    nullif(entitlement, '') AS x_EntitlementId,
    nullif(ent_type_trimmed, '') AS x_EntitlementType,
    -- x_DateProcessed: when the row was charged (null: not yet), UTC.
    date_processed AS x_DateProcessed,
    -- x_FetchedAt, x_RunId: when and by which Tally run the row was loaded.
    fetched_at AS x_FetchedAt,
    -- x_Family, x_Solution, x_Unit: the interface's own labels.
    family AS x_Family,
    -- x_PaidAs: direct, balance, license or other (see the header).
    paid_as AS x_PaidAs,
    -- x_PriceMatchedBy: where the unit price comes from: the rate card
    -- rule that matched (sku, meter name in parentheses, name), 'interface
    -- price', or 'cost / quantity'; null on a Correction.
    price_source AS x_PriceMatchedBy,
    -- x_RateCardSnapshotAt: the rate card snapshot the price comes from.
    card_snapshot_at AS x_RateCardSnapshotAt,
    CAST(run_id AS VARCHAR) AS x_RunId,
    solution AS x_Solution,
    unit AS x_Unit,
    -- x_Organization: the organization the charge is of (Tally's name;
    -- the FOCUS 1.3 export's billing account). Not in the 1.2 export.
    organization AS x_Organization
FROM d
UNION ALL BY NAME
-- A closed month: one row per project, meter, payment method and currency
-- with the figures as closed (month_close_figures), billed in the closed
-- month. The unit price is the closed value over the closed quantity (no
-- rate card columns are kept at close); the marketplace rule and the
-- billing account type are the payment method's in force that month, as on
-- the rows they replace. The billing account's name, the sku and price id,
-- the service, region and sub-account name and the interface's labels are
-- as the month's usage rows had them, kept at close (month_close_keys);
-- what a row of figures cannot say (the entitlement, how it was paid)
-- stays null.
SELECT CASE WHEN f.marketplace THEN CAST(0 AS DECIMAL(38, 12)) ELSE f.billed END AS BilledCost,
       coalesce(nullif(f.payment_method, ''), 'unassigned') AS BillingAccountId,
       coalesce(f.payment_method_name, nullif(f.pm_name, '')) AS BillingAccountName,
       coalesce(nullif(f.pm_type, ''), 'Unknown') AS BillingAccountType,
       f.currency AS BillingCurrency,
       CAST(f.month AS TIMESTAMP) AT TIME ZONE 'UTC' AS BillingPeriodStart,
       (CAST(f.month AS TIMESTAMP) + INTERVAL 1 MONTH) AT TIME ZONE 'UTC' AS BillingPeriodEnd,
       'Usage' AS ChargeCategory,
       CASE WHEN f.unit_price IS NULL THEN 'Correction' END AS ChargeClass,
       f.meter_name || ' (as closed ' || strftime(f.acted_at, '%Y-%m-%d') || ')' AS ChargeDescription,
       'Usage-Based' AS ChargeFrequency,
       CAST(f.month AS TIMESTAMP) AT TIME ZONE 'UTC' AS ChargePeriodStart,
       (CAST(f.month AS TIMESTAMP) + INTERVAL 1 MONTH) AT TIME ZONE 'UTC' AS ChargePeriodEnd,
       f.quantity AS ConsumedQuantity,
       coalesce(f.consumed_unit, nullif(f.unit, ''), 'Units') AS ConsumedUnit,
       CASE WHEN f.unit_price IS NOT NULL THEN CAST(f.quantity * f.unit_price AS DECIMAL(38, 12)) ELSE f.cost END AS ContractedCost,
       f.unit_price AS ContractedUnitPrice,
       f.effective AS EffectiveCost,
       CASE WHEN f.marketplace THEN f.pm_type ELSE 'Media cloud' END AS InvoiceIssuerName,
       CASE WHEN f.unit_price IS NOT NULL THEN CAST(f.quantity * f.unit_price AS DECIMAL(38, 12)) ELSE f.cost END AS ListCost,
       f.unit_price AS ListUnitPrice,
       CASE WHEN f.unit_price IS NOT NULL THEN 'Standard' END AS PricingCategory,
       f.quantity AS PricingQuantity,
       coalesce(f.consumed_unit, nullif(f.unit, ''), 'Units') AS PricingUnit,
       'Media cloud' AS ProviderName,
       'Media cloud' AS PublisherName,
       CASE WHEN lower(trim(coalesce(f.solution, ''))) = 'storage' THEN 'Storage' ELSE 'Media' END AS ServiceCategory,
       coalesce(f.solution, f.family, f.meter_name) AS ServiceName,
       coalesce(f.sku, f.meter_name) AS SkuId,
       f.meter_name AS SkuMeter,
       coalesce(f.price_name, f.sku, f.meter_name) AS SkuPriceId,
       CASE WHEN f.card_price IS NOT NULL THEN
           CAST(json_object('x_Family', f.family, 'x_Solution', f.solution, 'x_PriceName', f.price_name, 'x_PricingUnit', f.price_unit) AS VARCHAR)
       END AS SkuPriceDetails,
       f.location_name AS RegionId,
       CASE WHEN f.location_name IS NOT NULL THEN coalesce(nullif(f.location_display_name, ''), f.location_name) END AS RegionName,
       nullif(f.project, '') AS SubAccountId,
       CASE WHEN nullif(f.project, '') IS NOT NULL THEN coalesce(nullif(f.project_display_name, ''), f.project) END AS SubAccountName,
       CASE WHEN nullif(f.project, '') IS NOT NULL THEN 'Project' END AS SubAccountType,
       f.family AS x_Family,
       CASE WHEN f.card_price IS NOT NULL THEN f.card_snapshot_at END AS x_RateCardSnapshotAt,
       f.solution AS x_Solution,
       f.unit AS x_Unit,
       f.basis AS x_Basis,
       f.granularity AS x_Granularity,
       f.cost AS x_Cost,
       CASE WHEN f.unit_price IS NOT NULL THEN 'cost / quantity' END AS x_PriceMatchedBy,
       CAST(f.close_id AS VARCHAR) AS x_RunId,
       f.organization AS x_Organization
FROM (
    SELECT f.* EXCLUDE (unit), coalesce(nullif(f.unit, ''), k.unit) AS unit, c.month, c.acted_at, c.basis, c.granularity,
           pm.type AS pm_type, pm.display_name AS pm_name,
           nullif(pm.type, '') IS NOT NULL AND lower(pm.type) <> 'direct' AS marketplace,
           CASE WHEN f.quantity > 0 AND f.cost >= 0 THEN CAST(CAST(f.cost AS DOUBLE) / CAST(f.quantity AS DOUBLE) AS DECIMAL(38, 12))
                WHEN f.quantity = 0 AND f.cost = 0 THEN CAST(0 AS DECIMAL(38, 12))
           END AS unit_price,
           coalesce(k.meter_sku, s.meter_sku) AS sku, k.family, k.solution, k.payment_method_name,
           CASE WHEN k.meter_name IS NOT NULL THEN focus_unit(coalesce(k.unit, '')) END AS consumed_unit,
           k.price_name, k.price_unit, k.card_snapshot_at, k.card_price,
           k.project_display_name, k.location_name, k.location_display_name
    FROM month_close_figures f
    JOIN closed_months c ON c.id = f.close_id AND c.organization = f.organization
    LEFT JOIN payment_methods_by_month pm ON pm.organization = f.organization AND pm.month = c.month AND pm.id = f.payment_method
    LEFT JOIN month_close_keys k
           ON k.organization = f.organization AND k.month = c.month AND k.basis = c.basis AND k.granularity = c.granularity
          AND k.project = coalesce(f.project, '') AND k.meter_name = f.meter_name
          AND k.payment_method = coalesce(f.payment_method, '') AND k.currency = f.currency
    LEFT JOIN meter_skus s ON s.meter_name = f.meter_name
) f
UNION ALL BY NAME
-- Late charges for a closed month: the difference between today's rows
-- and the closed figures (closed_month_adjustments), as ChargeClass
-- 'Correction' rows billed in found_month, the month Tally loaded them; the
-- charge period stays the closed month. A Correction may leave prices and
-- quantities null, as FOCUS allows.
SELECT CASE WHEN a.marketplace THEN CAST(0 AS DECIMAL(38, 12)) ELSE a.billed_difference END AS BilledCost,
       coalesce(nullif(a.payment_method, ''), 'unassigned') AS BillingAccountId,
       coalesce(a.payment_method_name, nullif(a.pm_name, '')) AS BillingAccountName,
       coalesce(nullif(a.pm_type, ''), 'Unknown') AS BillingAccountType,
       a.currency AS BillingCurrency,
       CAST(a.found_month AS TIMESTAMP) AT TIME ZONE 'UTC' AS BillingPeriodStart,
       (CAST(a.found_month AS TIMESTAMP) + INTERVAL 1 MONTH) AT TIME ZONE 'UTC' AS BillingPeriodEnd,
       'Usage' AS ChargeCategory,
       'Correction' AS ChargeClass,
       a.meter_name || ' (late charges for closed ' || strftime(a.month, '%Y-%m') || ')' AS ChargeDescription,
       'Usage-Based' AS ChargeFrequency,
       CAST(a.month AS TIMESTAMP) AT TIME ZONE 'UTC' AS ChargePeriodStart,
       (CAST(a.month AS TIMESTAMP) + INTERVAL 1 MONTH) AT TIME ZONE 'UTC' AS ChargePeriodEnd,
       a.difference AS ContractedCost,
       a.effective_difference AS EffectiveCost,
       CASE WHEN a.marketplace THEN a.pm_type ELSE 'Media cloud' END AS InvoiceIssuerName,
       a.difference AS ListCost,
       'Standard' AS PricingCategory,
       'Media cloud' AS ProviderName,
       'Media cloud' AS PublisherName,
       CASE WHEN lower(trim(coalesce(a.solution, ''))) = 'storage' THEN 'Storage' ELSE 'Media' END AS ServiceCategory,
       coalesce(a.solution, a.family, a.meter_name) AS ServiceName,
       coalesce(a.sku, a.meter_name) AS SkuId,
       a.meter_name AS SkuMeter,
       coalesce(a.price_name, a.sku, a.meter_name) AS SkuPriceId,
       CASE WHEN a.card_price IS NOT NULL THEN
           CAST(json_object('x_Family', a.family, 'x_Solution', a.solution, 'x_PriceName', a.price_name, 'x_PricingUnit', a.price_unit) AS VARCHAR)
       END AS SkuPriceDetails,
       a.location_name AS RegionId,
       CASE WHEN a.location_name IS NOT NULL THEN coalesce(nullif(a.location_display_name, ''), a.location_name) END AS RegionName,
       nullif(a.project, '') AS SubAccountId,
       CASE WHEN nullif(a.project, '') IS NOT NULL THEN coalesce(nullif(a.project_display_name, ''), a.project) END AS SubAccountName,
       CASE WHEN nullif(a.project, '') IS NOT NULL THEN 'Project' END AS SubAccountType,
       a.family AS x_Family,
       CASE WHEN a.card_price IS NOT NULL THEN a.card_snapshot_at END AS x_RateCardSnapshotAt,
       a.solution AS x_Solution,
       a.unit AS x_Unit,
       a.basis AS x_Basis,
       a.granularity AS x_Granularity,
       a.difference AS x_Cost,
       a.organization AS x_Organization
FROM (
    SELECT a.*, pm.type AS pm_type, pm.display_name AS pm_name,
           nullif(pm.type, '') IS NOT NULL AND lower(pm.type) <> 'direct' AS marketplace,
           coalesce(k.meter_sku, s.meter_sku) AS sku, k.family, k.solution, k.unit, k.payment_method_name,
           k.price_name, k.price_unit, k.card_snapshot_at, k.card_price,
           k.project_display_name, k.location_name, k.location_display_name
    FROM closed_month_adjustments a
    LEFT JOIN payment_methods_by_month pm ON pm.organization = a.organization AND pm.month = a.month AND pm.id = a.payment_method
    LEFT JOIN month_close_keys k
           ON k.organization = a.organization AND k.month = a.month AND k.basis = a.basis AND k.granularity = a.granularity
          AND k.project = coalesce(a.project, '') AND k.meter_name = a.meter_name
          AND k.payment_method = coalesce(a.payment_method, '') AND k.currency = a.currency
    LEFT JOIN meter_skus s ON s.meter_name = a.meter_name
) a
WHERE a.difference <> 0 OR a.billed_difference <> 0 OR a.effective_difference <> 0
);
