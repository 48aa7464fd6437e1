package store

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

// focusBefore is the focus view as it was defined before its closed-month
// test became an anti join and its price's currency test left the join
// condition (issue 23: together they made it a nested loop over every row).
const focusBefore = `CREATE VIEW focus_before AS
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
    -- An estimated row no rate card price matched has no cost to state:
    -- the workbook flags it; FOCUS, whose cost columns are required,
    -- leaves it out.
      AND NOT (ur.basis = 'estimated' AND ur.cost IS NULL)
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
    SELECT CAST(f.month AS TIMESTAMP) AS charge_month, s.name, s.display_name, s.location_name
    FROM snapshots_in_force f
    JOIN project_snapshots s ON s.name = f.key AND s.snapshot_at = f.snapshot_at
    WHERE f.kind = 'project'
    QUALIFY row_number() OVER (PARTITION BY f.month, s.name ORDER BY CAST(s.raw AS VARCHAR)) = 1
),
location AS (
    -- a location's latest name for display; its id (the name) is what the
    -- project snapshot in force gives
    SELECT name, display_name
    FROM location_snapshots
    QUALIFY row_number() OVER (PARTITION BY name ORDER BY snapshot_at DESC, CAST(raw AS VARCHAR)) = 1
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
           project.display_name AS project_display_name,
           nullif(project.location_name, '') AS location_name,
           location.display_name AS location_display_name,
           regexp_replace(lower(coalesce(u.entitlement_type, '')), '[^a-z]', '', 'g') AS ent_kind,
           nullif(pm.type, '') IS NOT NULL AND lower(pm.type) <> 'direct' AS marketplace
    FROM u
    LEFT JOIN priced pr
           ON pr.charge_month = u.charge_month AND pr.pm_key = u.pm_key AND pr.meter_name = u.meter_name
          AND pr.sku_key = u.sku_key AND coalesce(pr.card_currency, u.currency) = u.currency
    LEFT JOIN pm ON pm.charge_month = u.charge_month AND pm.id = u.payment_method
    LEFT JOIN project ON project.charge_month = u.charge_month AND project.name = u.project
    LEFT JOIN location ON location.name = project.location_name
),
c AS (
    SELECT r.*,
           nullif(entitlement, '') IS NOT NULL AND ent_kind IN ('license', 'quantity', 'cash', 'precommitment') AS commitment,
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
           END AS consumed_unit
    FROM r
)
SELECT
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
    date_trunc('month', coalesce(date_processed, date)) AT TIME ZONE 'UTC' AS BillingPeriodStart,
    (date_trunc('month', coalesce(date_processed, date)) + INTERVAL 1 MONTH) AT TIME ZONE 'UTC' AS BillingPeriodEnd,
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
    date AT TIME ZONE 'UTC' AS ChargePeriodStart,
    (date + CASE granularity
                WHEN 'hour' THEN INTERVAL 1 HOUR
                WHEN 'day' THEN INTERVAL 1 DAY
                WHEN 'week' THEN INTERVAL 7 DAY
                WHEN 'month' THEN INTERVAL 1 MONTH
                ELSE INTERVAL 1 YEAR
            END) AT TIME ZONE 'UTC' AS ChargePeriodEnd,
    -- CommitmentDiscountCategory: Usage for license and quantity
    -- entitlements, Spend for cash and pre-commitment (see the header).
    CASE WHEN commitment THEN CASE WHEN ent_kind IN ('license', 'quantity') THEN 'Usage' ELSE 'Spend' END END AS CommitmentDiscountCategory,
    -- CommitmentDiscountId: the entitlement that applied, of a known type.
    CASE WHEN commitment THEN entitlement END AS CommitmentDiscountId,
    -- CommitmentDiscountName: null: the interface gives no display name.
    CAST(NULL AS VARCHAR) AS CommitmentDiscountName,
    -- CommitmentDiscountQuantity: what the row consumed of the commitment:
    -- the metered quantity (Usage), or the usage value (Spend).
    CASE WHEN commitment THEN CASE WHEN ent_kind IN ('license', 'quantity') THEN qty ELSE cost END END AS CommitmentDiscountQuantity,
    -- CommitmentDiscountUnit: the unit of CommitmentDiscountQuantity: the
    -- usage unit (Usage), the billing currency (Spend), as FOCUS's own
    -- spend-based examples do.
    CASE WHEN commitment THEN CASE WHEN ent_kind IN ('license', 'quantity') THEN consumed_unit ELSE currency END END AS CommitmentDiscountUnit,
    -- CommitmentDiscountStatus: 'Used' where a commitment applied.
    CASE WHEN commitment THEN 'Used' END AS CommitmentDiscountStatus,
    -- CommitmentDiscountType: the entitlement type exactly as sent.
    CASE WHEN commitment THEN trim(entitlement_type) END AS CommitmentDiscountType,
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
    CASE WHEN unit_price IS NOT NULL THEN CAST(qty * unit_price AS DECIMAL(38, 12)) ELSE cost END AS ContractedCost,
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
    CASE WHEN unit_price IS NOT NULL THEN CAST(qty * unit_price AS DECIMAL(38, 12)) ELSE cost END AS ListCost,
    unit_price AS ListUnitPrice,
    -- PricingCategory: 'Committed' under a commitment discount, else
    -- 'Standard'; null on a Correction.
    CASE WHEN unit_price IS NULL THEN NULL WHEN commitment THEN 'Committed' ELSE 'Standard' END AS PricingCategory,
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
    nullif(trim(entitlement_type), '') AS x_EntitlementType,
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
    unit AS x_Unit
FROM c
UNION ALL BY NAME
-- A closed month: one row per project, meter, payment method and currency
-- with the figures as closed (month_close_figures), billed in the closed
-- month. The unit price is the closed value over the closed quantity (no
-- rate card columns are kept at close); the marketplace rule and the
-- billing account type are the payment method's in force that month, as on
-- the rows they replace.
SELECT CASE WHEN f.marketplace THEN CAST(0 AS DECIMAL(38, 12)) ELSE f.billed END AS BilledCost,
       coalesce(nullif(f.payment_method, ''), 'unassigned') AS BillingAccountId,
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
       coalesce(nullif(f.unit, ''), 'Units') AS ConsumedUnit,
       CASE WHEN f.unit_price IS NOT NULL THEN CAST(f.quantity * f.unit_price AS DECIMAL(38, 12)) ELSE f.cost END AS ContractedCost,
       f.unit_price AS ContractedUnitPrice,
       f.effective AS EffectiveCost,
       CASE WHEN f.marketplace THEN f.pm_type ELSE 'Media cloud' END AS InvoiceIssuerName,
       CASE WHEN f.unit_price IS NOT NULL THEN CAST(f.quantity * f.unit_price AS DECIMAL(38, 12)) ELSE f.cost END AS ListCost,
       f.unit_price AS ListUnitPrice,
       CASE WHEN f.unit_price IS NOT NULL THEN 'Standard' END AS PricingCategory,
       f.quantity AS PricingQuantity,
       coalesce(nullif(f.unit, ''), 'Units') AS PricingUnit,
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
       f.basis AS x_Basis,
       f.granularity AS x_Granularity,
       f.cost AS x_Cost,
       CASE WHEN f.unit_price IS NOT NULL THEN 'cost / quantity' END AS x_PriceMatchedBy,
       CAST(f.close_id AS VARCHAR) AS x_RunId
FROM (
    SELECT f.*, c.month, c.acted_at, c.basis, c.granularity, pm.type AS pm_type,
           nullif(pm.type, '') IS NOT NULL AND lower(pm.type) <> 'direct' AS marketplace,
           CASE WHEN f.quantity > 0 AND f.cost >= 0 THEN CAST(CAST(f.cost AS DOUBLE) / CAST(f.quantity AS DOUBLE) AS DECIMAL(38, 12))
                WHEN f.quantity = 0 AND f.cost = 0 THEN CAST(0 AS DECIMAL(38, 12))
           END AS unit_price
    FROM month_close_figures f
    JOIN closed_months c ON c.id = f.close_id
    LEFT JOIN payment_methods_by_month pm ON pm.month = c.month AND pm.id = f.payment_method
) f
UNION ALL BY NAME
-- Late charges for a closed month: the difference between today's rows
-- and the closed figures (closed_month_adjustments), as ChargeClass
-- 'Correction' rows billed in found_month, the month Tally loaded them; the
-- charge period stays the closed month. A Correction may leave prices and
-- quantities null, as FOCUS allows.
SELECT CASE WHEN a.marketplace THEN CAST(0 AS DECIMAL(38, 12)) ELSE a.billed_difference END AS BilledCost,
       coalesce(nullif(a.payment_method, ''), 'unassigned') AS BillingAccountId,
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
FROM (
    SELECT a.*, pm.type AS pm_type,
           nullif(pm.type, '') IS NOT NULL AND lower(pm.type) <> 'direct' AS marketplace
    FROM closed_month_adjustments a
    LEFT JOIN payment_methods_by_month pm ON pm.month = a.month AND pm.id = a.payment_method
) a
WHERE a.difference <> 0 OR a.billed_difference <> 0 OR a.effective_difference <> 0
`

// TestFocusAsBefore: the focus view gives exactly the rows of its former
// definition, on the export fixture's months with one of them closed and
// one payment method's prices in a currency that is not the usage's.
func TestFocusAsBefore(t *testing.T) {
	ctx := context.Background()
	s, _ := exportFixture(t)
	for _, q := range []string{
		// Copies of rows with the entitlement types spelled every way the
		// views take (the spellings the interface sends are read without
		// trim, lower or a regular expression; the others through them).
		`INSERT INTO usage SELECT u.* REPLACE (t.et AS entitlement_type, e.ent AS entitlement, NULL AS key_id)
FROM (SELECT * FROM usage ORDER BY date, meter_name, project LIMIT 3) u,
     (VALUES ('license'), ('License'), (' license '), ('cash'), ('CASH'), ('quantity'), ('preCommitment'), ('pre-commitment'),
             ('Pre Commitment'), ('precommitment'), ('promotional'), (''), ('  '), (NULL)) t(et),
     (VALUES (NULL), (''), (' '), ('ent-1')) e(ent)`,
		// Rows priced at what the interface sent, whose quantity × price
		// to 12 decimals is a tie (0.5 × 61e-12 and 0.5 × 245e-12 are ties
		// whose doubles' product rounds the other way), negative, inexact as
		// doubles or past a double's precision: ListCost rounds the doubles'
		// product only where it must be the exact one's rounding.
		`INSERT INTO usage SELECT u.* REPLACE ('unpriced meter' AS meter_name, t.q AS quantity, t.p AS price, NULL AS entitlement_type, NULL AS entitlement, NULL AS key_id)
FROM (SELECT * FROM usage ORDER BY date DESC, meter_name, project LIMIT 1) u,
     (VALUES (0.5, 1e-12), (1.5, 1e-12), (0.5, 61e-12), (0.5, 245e-12), (2.5e-7, 2e-6), (-0.5, 1e-12), (-2.5, 1e-12), (0.1, 0.3), (3.0000001, 0.000000333333),
             (12345678.9, 7.123456789012), (98765432.123, 0.000123456789), (1e-9, 0.999999999999), (0, 0.25)) t(q, p)`,
		`INSERT INTO month_closes (id, month, basis, granularity, action, acted_at, who)
SELECT uuid(), CAST(date_trunc('month', min(date)) AS DATE), 'usage', 'day', 'close', TIMESTAMP '2026-09-01', 'test' FROM usage`,
		// Estimated rows, one without a cost (left out), and reported rows
		// charged 20 days after they happened, the later month of them
		// closed: the closed test goes by the month they are charged in.
		`INSERT INTO usage SELECT u.* EXCLUDE (n) REPLACE ('estimated' AS basis, CASE WHEN n % 2 = 0 THEN NULL ELSE u.cost END AS cost, NULL AS key_id)
FROM (SELECT *, row_number() OVER (ORDER BY date DESC, meter_name, project) AS n FROM usage WHERE basis = 'usage' ORDER BY n LIMIT 6) u`,
		`INSERT INTO usage SELECT u.* REPLACE ('reported' AS basis, u.date + INTERVAL 20 DAY AS date_processed, NULL AS key_id)
FROM (SELECT * FROM usage WHERE basis = 'usage' AND day(date) > 15
      QUALIFY row_number() OVER (PARTITION BY date_trunc('month', date) ORDER BY date, meter_name, project) <= 20) u`,
		`INSERT INTO month_closes (id, month, basis, granularity, action, acted_at, who)
SELECT uuid(), CAST(date_trunc('month', max(date_processed)) AS DATE), 'reported', 'day', 'close', TIMESTAMP '2026-09-01', 'test'
FROM usage WHERE basis = 'reported'`,
		`UPDATE rate_card_price_snapshots SET currency = 'XTS'
WHERE payment_method_id = (SELECT min(payment_method_id) FROM rate_card_price_snapshots)`,
		focusBefore,
	} {
		if _, err := s.db.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	// The rows copied here were written by other means than a load: the
	// writer numbers them (as when it opens the store) before focus reads
	// them. The loaded ones the load numbered.
	if n := count(t, s, `SELECT count(*) FROM usage WHERE key_id IS NULL`); n == 0 {
		t.Fatal("no copied row lacks a key: the numbering of rows written otherwise is not tried")
	}
	if err := s.KeyUsage(ctx); err != nil {
		t.Fatal(err)
	}
	checkUsageKeys(t, s)
	for _, c := range []struct{ what, q string }{
		{"estimated rows without a cost", `SELECT count(*) FROM usage WHERE basis = 'estimated' AND cost IS NULL`},
		{"estimated rows with a cost", `SELECT count(*) FROM usage WHERE basis = 'estimated' AND cost IS NOT NULL`},
		{"reported rows of an open month charged in a closed one", `SELECT count(*) FROM usage u JOIN closed_months c
ON c.basis = 'reported' AND u.basis = 'reported' AND date_trunc('month', u.date) < c.month AND u.date_processed >= c.month`},
		{"reported rows in no closed month", `SELECT count(*) FROM usage u WHERE basis = 'reported'
AND NOT EXISTS (SELECT 1 FROM closed_months c WHERE c.basis = 'reported' AND date_trunc('month', u.date_processed) = c.month)`},
	} {
		if count(t, s, c.q) == 0 {
			t.Fatalf("the fixture has no %s", c.what)
		}
	}
	// usage_rows' paid_as as it was before the spellings the interface
	// sends were taken first.
	paidAsBefore := rowsText(t, s, `SELECT coalesce(entitlement_type, '<null>'), coalesce(entitlement, '<null>'), CASE
           WHEN nullif(trim(entitlement_type), '') IS NULL THEN
               CASE WHEN nullif(trim(entitlement), '') IS NULL THEN 'direct' ELSE 'other' END
           WHEN lower(entitlement_type) = 'license' THEN 'license'
           WHEN lower(entitlement_type) IN ('cash', 'quantity', 'precommitment') THEN 'balance'
           ELSE CASE regexp_replace(lower(entitlement_type), '[^a-z]', '', 'g')
                    WHEN 'license' THEN 'license' WHEN 'cash' THEN 'balance' WHEN 'quantity' THEN 'balance' WHEN 'precommitment' THEN 'balance'
                    ELSE 'other'
                END
       END FROM usage ORDER BY ALL`)
	equalLines(t, "usage_rows.paid_as", rowsText(t, s, `SELECT coalesce(entitlement_type, '<null>'), coalesce(entitlement, '<null>'), paid_as FROM usage_rows ORDER BY ALL`), paidAsBefore)
	// Since issue 38 a closed month's frozen and Correction rows carry
	// what the month's usage rows carry (the account's name, the sku and
	// the rest, which the former definition left null or set to the
	// meter): those columns are compared on the other rows only.
	masked := func(view string) string {
		cols := []string{"BillingAccountName", "ServiceCategory", "ServiceName", "SkuId", "SkuPriceId", "SkuPriceDetails", "RegionId", "RegionName",
			"SubAccountName", "ConsumedUnit", "PricingUnit", "x_Family", "x_RateCardSnapshotAt", "x_Solution", "x_Unit"}
		for i, c := range cols {
			cols[i] = "CASE WHEN closed THEN NULL ELSE " + c + " END AS " + c
		}
		return `(SELECT * EXCLUDE (closed) REPLACE (` + strings.Join(cols, ", ") + `) FROM (SELECT *, ChargeDescription LIKE '%(as closed %' OR ChargeDescription LIKE '%(late charges for closed %' AS closed FROM ` + view + `))`
	}
	if n := count(t, s, `SELECT count(*) FROM focus WHERE ChargeDescription LIKE '%(late charges for closed %' AND SkuId <> SkuMeter`); n == 0 {
		t.Fatal("no Correction row of a closed month carries a sku: the masked columns compare nothing of them")
	}
	want, got := viewLines(t, s, masked("focus_before")), viewLines(t, s, masked("focus"))
	if n := rowsText(t, s, `SELECT count(*) FROM usage`); len(want) == 0 || n[0] == "0" || n[0] == fmt.Sprint(len(want)) {
		t.Fatalf("focus has %d rows of %s usage rows: the closed month should leave some out", len(want), n[0])
	}
	if cur := rowsText(t, s, `SELECT count(*) FROM focus_before WHERE x_PriceMatchedBy IN ('interface price', 'cost / quantity')`); cur[0] == "0" {
		t.Fatal("no row is priced other than by the rate card: the currency test compares nothing")
	}
	if n := rowsText(t, s, `SELECT count(*) FROM focus_before WHERE SkuMeter = 'unpriced meter' AND ListCost <> CAST(CAST(ListCost AS DOUBLE) AS DECIMAL(38, 12))`); n[0] == "0" {
		t.Fatal("no unpriced meter's ListCost is past a double's precision: the rounding rows compare nothing")
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		for i := range want {
			if i >= len(got) || got[i] != want[i] {
				t.Fatalf("focus differs from its former definition (%d rows, %d before) at row %d:\ngot  %v\nwant %s", len(got), len(want), i, got[min(i, len(got)-1)], want[i])
			}
		}
		t.Fatalf("focus has %d rows, %d before", len(got), len(want))
	}
	t.Logf("%d focus rows, the same", len(got))
}

// usageValidityBefore and paymentMethodViolationsBefore are the two views
// as they were defined before a method's problems were listed once per
// method and month, and the violations summed before being listed (issue
// 23).
const usageValidityBefore = `CREATE VIEW usage_validity_before AS
WITH b AS (
    SELECT u.*,
           u.date + CASE u.granularity
               WHEN 'hour' THEN INTERVAL 1 HOUR
               WHEN 'day' THEN INTERVAL 1 DAY
               WHEN 'week' THEN INTERVAL 7 DAY
               WHEN 'month' THEN INTERVAL 1 MONTH
               ELSE INTERVAL 1 YEAR
           END AS bucket_end,
           CAST(date_trunc('month', u.period_at) AS DATE) AS pm_month
    FROM usage_rows u
    WHERE u.payment_method IS NOT NULL
)
SELECT b.*,
       pm.display_name AS pm_display_name,
       pm.type AS pm_type,
       pm.start_date AS valid_from,
       pm.end_date AS valid_until,
       pm.is_active AS pm_is_active,
       pm.terms_and_conditions_accepted AS pm_terms_accepted,
       pm.auto_purchase_stream_licenses AS pm_auto_purchase_stream_licenses,
       CASE
           WHEN pm.start_date IS NOT NULL AND b.bucket_end <= pm.start_date THEN 'before start'
           WHEN pm.end_date IS NOT NULL AND b.date >= pm.end_date THEN 'on or after end'
           WHEN (pm.start_date IS NULL OR b.date >= pm.start_date)
            AND (pm.end_date IS NULL OR b.bucket_end <= pm.end_date) THEN 'valid'
           ELSE 'cannot tell'
       END AS validity,
       list_filter([
           CASE WHEN pm.start_date IS NOT NULL AND pm.end_date IS NOT NULL AND pm.end_date <= pm.start_date THEN 'end not after start' END,
           CASE WHEN pm.is_active = false THEN 'inactive' END,
           CASE WHEN pm.terms_and_conditions_accepted = false THEN 'terms not accepted' END
       ], x -> x IS NOT NULL) AS method_problems,
       coalesce(lower(b.solution) = 'streaming' AND pm.auto_purchase_stream_licenses, false) AS streaming_auto_purchase
FROM b
JOIN payment_methods_by_month pm ON pm.month = b.pm_month AND pm.id = b.payment_method
`

const paymentMethodViolationsBefore = `CREATE VIEW payment_method_violations_before AS
WITH v AS (
    SELECT v.*
    FROM usage_validity_before v
    SEMI JOIN usage_coverage c
        ON c.basis = v.basis AND c.granularity = v.granularity AND c.day = CAST(v.period_at AS DATE)
),
p AS (
    SELECT v.*, unnest(
               CASE v.validity
                   WHEN 'valid' THEN []
                   WHEN 'cannot tell' THEN ['cannot tell at this granularity']
                   ELSE [v.validity]
               END || v.method_problems) AS problem
    FROM v
)
SELECT basis,
       pm_month AS month,
       payment_method,
       coalesce(nullif(pm_display_name, ''), min(nullif(payment_method_name, ''))) AS payment_method_name,
       pm_type AS type,
       problem,
       problem <> 'cannot tell at this granularity' AS violation,
       valid_from,
       valid_until,
       pm_is_active AS is_active,
       pm_terms_accepted AS terms_accepted,
       pm_auto_purchase_stream_licenses AS auto_purchase_stream_licenses,
       currency,
       CAST(min(date) AS DATE) AS first_day,
       CAST(max(date) AS DATE) AS last_day,
       count(*) AS rows,
       sum(cost) AS cost,
       sum(CASE WHEN streaming_auto_purchase THEN cost ELSE 0 END) AS streaming_auto_purchase
FROM p
GROUP BY basis, pm_month, payment_method, pm_display_name, pm_type, problem, valid_from, valid_until,
         pm_is_active, pm_terms_accepted, pm_auto_purchase_stream_licenses, currency
`

// TestPaymentMethodViolationsAsBefore: usage_validity and
// payment_method_violations give exactly the rows of their former
// definitions, on the export fixture with one more method that ends
// before it starts and whose terms are not accepted, and another that
// starts in the middle of the first month.
func TestPaymentMethodViolationsAsBefore(t *testing.T) {
	ctx := context.Background()
	s, _ := exportFixture(t)
	for _, q := range []string{
		`UPDATE payment_method_snapshots SET start_date = DATE '2026-09-15', end_date = DATE '2026-09-01', terms_and_conditions_accepted = false
WHERE id = (SELECT min(id) FROM payment_method_snapshots WHERE coalesce(is_active, true))`,
		`UPDATE payment_method_snapshots SET start_date = DATE '2026-08-20'
WHERE id = (SELECT max(id) FROM payment_method_snapshots WHERE coalesce(is_active, true))`,
		usageValidityBefore,
		paymentMethodViolationsBefore,
	} {
		if _, err := s.db.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	for _, view := range []string{"usage_validity", "payment_method_violations"} {
		r, err := s.db.QueryContext(ctx, `SELECT * FROM `+view+`_before ORDER BY ALL`)
		if err != nil {
			t.Fatal(err)
		}
		want := lines(t, r)
		if r, err = s.db.QueryContext(ctx, `SELECT * FROM `+view+` ORDER BY ALL`); err != nil {
			t.Fatal(err)
		}
		got := lines(t, r)
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Fatalf("%s differs from its former definition (%d rows, %d before):\ngot  %.3000s\nwant %.3000s", view, len(got), len(want), strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		t.Logf("%s: %d rows, the same", view, len(got))
	}
	problems := rowsText(t, s, `SELECT DISTINCT problem FROM payment_method_violations ORDER BY 1`)
	if strings.Join(problems, ",") != "before start,end not after start,inactive,on or after end,terms not accepted" {
		t.Fatalf("the fixture's problems are %v: the test compares less than it should", problems)
	}
}
