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
-- Columns Tally cannot fill from the interface are left out rather than
-- guessed: CommitmentDiscountCategory (an unknown entitlement type has no
-- honest Spend or Usage), region and resource columns (usage rows carry
-- neither), Tags, InvoiceId. Custom columns start with x_, as FOCUS asks.
CREATE OR REPLACE VIEW focus AS
WITH u AS (
    SELECT *,
           date_trunc('month', date) AS charge_month,
           coalesce(meter_sku, '') AS sku_key,
           coalesce(payment_method, '') AS pm_key
    FROM usage_rows ur
    -- A closed month's rows are shown as they stood at close (the frozen
    -- rows below), so a FOCUS consumer's sums for it never move.
    WHERE NOT EXISTS (
        SELECT 1 FROM closed_months c
        WHERE c.basis = ur.basis AND c.granularity = ur.granularity
          AND ur.period_at >= c.month AND ur.period_at < c.month + INTERVAL 1 MONTH
    )
),
priced AS (
    SELECT CAST(month AS TIMESTAMP) AS charge_month,
           payment_method_id AS pm_key,
           meter_name,
           coalesce(meter_sku, '') AS sku_key,
           matched_by,
           price AS card_price,
           currency AS card_currency,
           price_name,
           price_display_name,
           price_unit,
           card_snapshot_at
    FROM rate_card_matches
    WHERE price IS NOT NULL
),
pm AS (
    SELECT CAST(month AS TIMESTAMP) AS charge_month, id, display_name, type
    FROM payment_methods_by_month
),
project AS (
    SELECT CAST(f.month AS TIMESTAMP) AS charge_month, s.name, s.display_name
    FROM snapshots_in_force f
    JOIN project_snapshots s ON s.name = f.key AND s.snapshot_at = f.snapshot_at
    WHERE f.kind = 'project'
    QUALIFY row_number() OVER (PARTITION BY f.month, s.name ORDER BY CAST(s.raw AS VARCHAR)) = 1
),
r AS (
    SELECT u.*,
           CAST(u.quantity AS DECIMAL(38, 12)) AS qty,
           pr.matched_by,
           pr.card_price,
           pr.price_name,
           pr.price_display_name,
           pr.price_unit,
           pr.card_snapshot_at,
           pm.display_name AS pm_display_name,
           pm.type AS pm_type,
           project.display_name AS project_display_name
    FROM u
    LEFT JOIN priced pr
           ON pr.charge_month = u.charge_month AND pr.pm_key = u.pm_key AND pr.meter_name = u.meter_name
          AND pr.sku_key = u.sku_key AND coalesce(pr.card_currency, u.currency) = u.currency
    LEFT JOIN pm ON pm.charge_month = u.charge_month AND pm.id = u.payment_method
    LEFT JOIN project ON project.charge_month = u.charge_month AND project.name = u.project
)
SELECT
    -- BilledCost: what the invoice charges for the row: the interface's
    -- cost when billed directly (or under an unknown entitlement type); 0
    -- when a license covers it or a prepaid balance pays it.
    CASE WHEN paid_as IN ('license', 'balance') THEN CAST(0 AS DECIMAL(38, 12)) ELSE cost END AS BilledCost,
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
    date_trunc('month', coalesce(date_processed, date)) AT TIME ZONE 'UTC' AS BillingPeriodStart,
    (date_trunc('month', coalesce(date_processed, date)) + INTERVAL 1 MONTH) AT TIME ZONE 'UTC' AS BillingPeriodEnd,
    -- ChargeCategory: every usage row is 'Usage'.
    'Usage' AS ChargeCategory,
    -- ChargeClass: null on usage rows; 'Correction' on the rows below that
    -- carry late charges for a closed month.
    CAST(NULL AS VARCHAR) AS ChargeClass,
    -- ChargeDescription: the rate card's name for the price, with the meter.
    coalesce(price_display_name || ' (' || meter_name || ')', meter_name) AS ChargeDescription,
    -- ChargeFrequency: usage is metered.
    'Usage-Based' AS ChargeFrequency,
    -- ChargePeriodStart/End: the usage bucket: date, plus one granularity.
    date AT TIME ZONE 'UTC' AS ChargePeriodStart,
    (date + CASE granularity
                WHEN 'hour' THEN INTERVAL 1 HOUR
                WHEN 'day' THEN INTERVAL 1 DAY
                WHEN 'week' THEN INTERVAL 7 DAY
                WHEN 'month' THEN INTERVAL 1 MONTH
                ELSE INTERVAL 1 YEAR
            END) AT TIME ZONE 'UTC' AS ChargePeriodEnd,
    -- CommitmentDiscountId: the entitlement that applied, if any.
    nullif(entitlement, '') AS CommitmentDiscountId,
    -- CommitmentDiscountStatus: 'Used' where an entitlement applied.
    CASE WHEN nullif(entitlement, '') IS NOT NULL THEN 'Used' END AS CommitmentDiscountStatus,
    -- CommitmentDiscountType: the entitlement type exactly as sent
    -- (license, cash, quantity, pre-commitment, or one Tally does not
    -- know); 'Unknown' when the interface named an entitlement but no type.
    CASE WHEN nullif(entitlement, '') IS NOT NULL THEN coalesce(nullif(trim(entitlement_type), ''), 'Unknown') END AS CommitmentDiscountType,
    -- ConsumedQuantity: the metered quantity.
    qty AS ConsumedQuantity,
    -- ConsumedUnit: the usage unit in FOCUS unit format (minutes →
    -- Minutes, gigabytes → GB, gigabyte hours → GB-Hours; other units with
    -- their words capitalized); 'Units' when the interface sent none.
    CASE lower(trim(coalesce(unit, '')))
        WHEN '' THEN 'Units'
        WHEN 'second' THEN 'Seconds' WHEN 'seconds' THEN 'Seconds'
        WHEN 'minute' THEN 'Minutes' WHEN 'minutes' THEN 'Minutes'
        WHEN 'hour' THEN 'Hours' WHEN 'hours' THEN 'Hours'
        WHEN 'day' THEN 'Days' WHEN 'days' THEN 'Days'
        WHEN 'gigabyte' THEN 'GB' WHEN 'gigabytes' THEN 'GB' WHEN 'gb' THEN 'GB'
        WHEN 'terabyte' THEN 'TB' WHEN 'terabytes' THEN 'TB' WHEN 'tb' THEN 'TB'
        WHEN 'megabyte' THEN 'MB' WHEN 'megabytes' THEN 'MB' WHEN 'mb' THEN 'MB'
        WHEN 'gigabyte hour' THEN 'GB-Hours' WHEN 'gigabyte hours' THEN 'GB-Hours' WHEN 'gb hours' THEN 'GB-Hours' WHEN 'gb-hours' THEN 'GB-Hours'
        WHEN 'request' THEN 'Requests' WHEN 'requests' THEN 'Requests'
        ELSE array_to_string(list_transform(string_split(trim(unit), ' '), w -> upper(w[1]) || w[2:]), ' ')
    END AS ConsumedUnit,
    -- ContractedCost: quantity × the rate card price in force, rounded to
    -- 12 decimals; the interface's cost where no single price matched.
    -- The rate card is the payment method's own (possibly private) offer,
    -- so contracted and list prices are the same here.
    CASE WHEN card_price IS NOT NULL THEN CAST(qty * card_price AS DECIMAL(38, 12)) ELSE cost END AS ContractedCost,
    -- ContractedUnitPrice: the rate card price in force; null without one.
    card_price AS ContractedUnitPrice,
    -- EffectiveCost: the amortized cost: the interface's cost, also where
    -- a prepaid balance pays it (this row's share of the prepayment); 0
    -- under a license, whose own fee is not in the usage data.
    CASE WHEN paid_as = 'license' THEN CAST(0 AS DECIMAL(38, 12)) ELSE cost END AS EffectiveCost,
    -- InvoiceIssuerName: the marketplace for a marketplace payment method
    -- (its variant, as the interface names it), else the platform.
    CASE WHEN nullif(pm_type, '') IS NULL OR lower(pm_type) = 'direct' THEN 'Media cloud' ELSE pm_type END AS InvoiceIssuerName,
    -- ListCost: quantity × the rate card price in force (see
    -- ContractedCost); the interface's cost where no single price matched.
    CASE WHEN card_price IS NOT NULL THEN CAST(qty * card_price AS DECIMAL(38, 12)) ELSE cost END AS ListCost,
    -- ListUnitPrice: the rate card price in force; null without one.
    card_price AS ListUnitPrice,
    -- PricingCategory: 'Committed' under an entitlement, else 'Standard'.
    CASE WHEN nullif(entitlement, '') IS NOT NULL THEN 'Committed' ELSE 'Standard' END AS PricingCategory,
    -- PricingQuantity: the metered quantity (usage is priced per unit).
    qty AS PricingQuantity,
    -- PricingUnit: the rate card price's unit, else the usage unit, in
    -- FOCUS unit format as for ConsumedUnit.
    CASE lower(trim(coalesce(price_unit, unit, '')))
        WHEN '' THEN 'Units'
        WHEN 'second' THEN 'Seconds' WHEN 'seconds' THEN 'Seconds'
        WHEN 'minute' THEN 'Minutes' WHEN 'minutes' THEN 'Minutes'
        WHEN 'hour' THEN 'Hours' WHEN 'hours' THEN 'Hours'
        WHEN 'day' THEN 'Days' WHEN 'days' THEN 'Days'
        WHEN 'gigabyte' THEN 'GB' WHEN 'gigabytes' THEN 'GB' WHEN 'gb' THEN 'GB'
        WHEN 'terabyte' THEN 'TB' WHEN 'terabytes' THEN 'TB' WHEN 'tb' THEN 'TB'
        WHEN 'megabyte' THEN 'MB' WHEN 'megabytes' THEN 'MB' WHEN 'mb' THEN 'MB'
        WHEN 'gigabyte hour' THEN 'GB-Hours' WHEN 'gigabyte hours' THEN 'GB-Hours' WHEN 'gb hours' THEN 'GB-Hours' WHEN 'gb-hours' THEN 'GB-Hours'
        WHEN 'request' THEN 'Requests' WHEN 'requests' THEN 'Requests'
        ELSE array_to_string(list_transform(string_split(trim(coalesce(price_unit, unit)), ' '), w -> upper(w[1]) || w[2:]), ' ')
    END AS PricingUnit,
    -- ProviderName, PublisherName: the platform that sells and makes the
    -- services; a constant, as the interface does not name itself.
    'Media cloud' AS ProviderName,
    'Media cloud' AS PublisherName,
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
    coalesce(price_name, nullif(meter_sku, ''), meter_name) AS SkuPriceId,
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
    -- x_DateProcessed: when the row was charged (null: not yet), UTC.
    date_processed AS x_DateProcessed,
    -- x_FetchedAt, x_RunId: when and by which Tally run the row was loaded.
    fetched_at AS x_FetchedAt,
    -- x_Family, x_Solution, x_Unit: the interface's own labels.
    family AS x_Family,
    -- x_PaidAs: direct, balance, license or other (see the header).
    paid_as AS x_PaidAs,
    -- x_PriceMatchedBy: which rule found the list price: sku, meter name
    -- in parentheses, name; null when no single price matched.
    matched_by AS x_PriceMatchedBy,
    -- x_RateCardSnapshotAt: the rate card snapshot the price comes from.
    card_snapshot_at AS x_RateCardSnapshotAt,
    CAST(run_id AS VARCHAR) AS x_RunId,
    solution AS x_Solution,
    unit AS x_Unit
FROM r
UNION ALL BY NAME
-- A closed month: one row per project, meter, payment method and currency
-- with the figures as closed (month_close_figures), billed in the closed
-- month. Rate card columns are not kept at close: list and contracted
-- cost are the usage value.
SELECT f.billed AS BilledCost,
       coalesce(nullif(f.payment_method, ''), 'unassigned') AS BillingAccountId,
       'Unknown' AS BillingAccountType,
       f.currency AS BillingCurrency,
       CAST(c.month AS TIMESTAMP) AT TIME ZONE 'UTC' AS BillingPeriodStart,
       (CAST(c.month AS TIMESTAMP) + INTERVAL 1 MONTH) AT TIME ZONE 'UTC' AS BillingPeriodEnd,
       'Usage' AS ChargeCategory,
       CAST(NULL AS VARCHAR) AS ChargeClass,
       f.meter_name || ' (as closed ' || strftime(c.acted_at, '%Y-%m-%d') || ')' AS ChargeDescription,
       'Usage-Based' AS ChargeFrequency,
       CAST(c.month AS TIMESTAMP) AT TIME ZONE 'UTC' AS ChargePeriodStart,
       (CAST(c.month AS TIMESTAMP) + INTERVAL 1 MONTH) AT TIME ZONE 'UTC' AS ChargePeriodEnd,
       f.cost AS ContractedCost,
       f.effective AS EffectiveCost,
       'Media cloud' AS InvoiceIssuerName,
       f.cost AS ListCost,
       'Standard' AS PricingCategory,
       'Media cloud' AS ProviderName,
       'Media cloud' AS PublisherName,
       'Media' AS ServiceCategory,
       f.meter_name AS ServiceName,
       f.meter_name AS SkuId,
       f.meter_name AS SkuMeter,
       f.meter_name AS SkuPriceId,
       nullif(f.project, '') AS SubAccountId,
       nullif(f.project, '') AS SubAccountName,
       CASE WHEN nullif(f.project, '') IS NOT NULL THEN 'Project' END AS SubAccountType,
       c.basis AS x_Basis,
       c.granularity AS x_Granularity,
       f.cost AS x_Cost,
       CAST(c.id AS VARCHAR) AS x_RunId
FROM month_close_figures f
JOIN closed_months c ON c.id = f.close_id
UNION ALL BY NAME
-- Late charges for a closed month: the difference between today's rows
-- and the closed figures (closed_month_adjustments), as ChargeClass
-- 'Correction' rows billed in found_month, the month Tally loaded them; the
-- charge period stays the closed month.
SELECT a.billed_difference AS BilledCost,
       coalesce(nullif(a.payment_method, ''), 'unassigned') AS BillingAccountId,
       'Unknown' AS BillingAccountType,
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
       'Media cloud' AS InvoiceIssuerName,
       a.difference AS ListCost,
       'Standard' AS PricingCategory,
       'Media cloud' AS ProviderName,
       'Media cloud' AS PublisherName,
       'Media' AS ServiceCategory,
       a.meter_name AS ServiceName,
       a.meter_name AS SkuId,
       a.meter_name AS SkuMeter,
       a.meter_name AS SkuPriceId,
       nullif(a.project, '') AS SubAccountId,
       nullif(a.project, '') AS SubAccountName,
       CASE WHEN nullif(a.project, '') IS NOT NULL THEN 'Project' END AS SubAccountType,
       a.basis AS x_Basis,
       a.granularity AS x_Granularity,
       a.difference AS x_Cost
FROM closed_month_adjustments a
WHERE a.difference <> 0 OR a.billed_difference <> 0 OR a.effective_difference <> 0;
