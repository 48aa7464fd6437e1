package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/tally-dev/tally"
	"github.com/tally-dev/tally/internal/atomicfile"
)

// FOCUS versions the export writes.
const (
	FOCUS12 = "1.2" // the Cost and Usage rows of the focus view, as they were before 1.3
	FOCUS13 = "1.3" // the default: Cost and Usage at 1.3, a Contract Commitment dataset and FOCUS metadata
)

// FOCUSMetadataName is the FOCUS 1.3 metadata file at the top of a FOCUS
// export: data generator, dataset instances, schema (FOCUS version) and
// recency with time sectors. Its leading underscore keeps Spark, Hive and
// Trino from reading it as data.
const FOCUSMetadataName = "_focus_metadata.json"

// focusCommitmentsDataset is the Contract Commitment dataset's folder.
const focusCommitmentsDataset = "focus_contract_commitment"

// focusCommitmentsCSVDataset is its CSV's folder (with CSV).
const focusCommitmentsCSVDataset = focusCommitmentsDataset + "_csv"

// focus13Nulls say, for the export's manifest, why a column FOCUS 1.3
// defines is null (or not what a reader might expect) in Tally's export.
var focus13Nulls = map[string]string{
	"ContractCommitmentCost":        "null: the interface gives no entitlement amount (what was bought); x_AppliedCost holds what the usage drew from it so far",
	"ContractCommitmentQuantity":    "null: the interface gives no entitlement quantity; x_AppliedQuantity holds what the usage drew from it so far",
	"ContractCommitmentUnit":        "null because ContractCommitmentQuantity is",
	"ContractCommitmentPeriodStart": "the entitlement's own dates are not in the interface: its payment method's period (ContractPeriodStart)",
	"ContractCommitmentPeriodEnd":   "the entitlement's own dates are not in the interface: its payment method's period (ContractPeriodEnd)",
	"ContractPeriodStart":           "the payment method's startDate; when it has none (no lower bound), the day it was created, else the first charge under it (x_ContractPeriodOpenStart true)",
	"ContractPeriodEnd":             "the payment method's endDate (exclusive); when it has none (it never expires), the end of the last billing period with a charge under it (x_ContractPeriodOpenEnd true)",
	"AllocatedMethodId":             "the rule's entry (rule@YYYY-MM) and the method applied (even, fixed, proportional, driver); null on a charge no rule shares (x_AllocationOriginId null too)",
	"AllocatedMethodDetails":        "one element per allocated charge: its AllocatedRatio (the ratios of an origin charge sum to 1), for a driver the receiver's UsageQuantity of the driver meter in the month and its UsageUnit, x_Method and x_Rule; null on a charge no rule shares",
	"AllocatedResourceId":           "the receiving cost centre (allocation.cost_centres); null on a charge no rule shares",
	"AllocatedResourceName":         "the receiving cost centre; null on a charge no rule shares",
	"AllocatedTags":                 "{\"tally/cost-centre\": the receiving cost centre}; null on a charge no rule shares",
	"x_AllocationOriginId":          "on an allocated charge: the origin row it was split from (the origin row itself is not in the export; its parts replace it and sum to it: BilledCost, EffectiveCost, x_Cost and quantities exactly, ListCost and ContractedCost, unit price × the part's quantity, within 10^-12 a part). A closed month's frozen rows and Corrections are not split (they carry no family or paid-as to match a charge)",
	"ContractApplied":               "null on rows without an entitlement of a known type (license, quantity, cash, pre-commitment); an unknown type is not claimed as a commitment (x_EntitlementId keeps it)",
	"CommitmentDiscountName":        "null: the interface gives entitlements no display name",
	"BillingAccountId":              "the organization the charge is of (its id as its latest snapshot gives it; x_Organization is Tally's name for it); the payment method is x_PaymentMethodId",
}

// focus13Lookups set the session variables the FOCUS 1.3 queries read:
// each organization's id and name and the contract of each commitment,
// each a map small enough to hold (an entry per organization, a few per
// entitlement). The queries look them up per row rather than join
// them: joined, DuckDB's join order could make the rows of a ranged
// export the side it holds, and ran out of memory at the writer's
// memory_limit. The parameters are the export's granularity and basis.
//
// The organization of a row is its own (the focus view's x_Organization,
// usage.organization): its id and name are those of its latest snapshot,
// else the organizations table's. A commitment is an entitlement of a known
// type (the focus view's commitment discounts); its contract is the payment
// method it was charged under, the first should one entitlement appear
// under two, so that it has exactly one parent. An entitlement drawn in
// several currencies (the interface gives a currency per row) is one
// commitment per currency, its id the entitlement's followed by
// "/CURRENCY" (focusCommitmentID), so that no amount adds one currency to
// another; currencies counts them.
var focus13Lookups = []struct {
	query string
	args  func(ExportOptions) []any
}{
	{`SET VARIABLE tally_focus_org = (
SELECT map_from_entries(coalesce(list((organization, {'id': id, 'name': name})), []))
FROM (
    SELECT coalesce(s.organization, o.name) AS organization,
           coalesce(s.id, o.id) AS id,
           coalesce(s.name, o.name) AS name
    FROM (SELECT organization, arg_max(id, snapshot_at) AS id, arg_max(name, snapshot_at) AS name
          FROM organization_snapshots GROUP BY organization) s
    FULL JOIN organizations o ON o.name = s.organization
))`, nil},
	{`SET VARIABLE tally_focus_contracts = (
SELECT map_from_entries(coalesce(list((commitment_id, {'contract': contract_id, 'currencies': currencies})), []))
FROM (
    SELECT entitlement AS commitment_id,
           min(coalesce(nullif(payment_method, ''), 'unassigned')) AS contract_id,
           count(DISTINCT currency) AS currencies
    FROM usage
    WHERE granularity = ? AND basis = ? AND nullif(entitlement, '') IS NOT NULL
      -- the types as the interface spells them first, as the focus view
      -- does: the regular expression on every row of the history was half
      -- of this pass
      AND (entitlement_type IN ('license', 'cash', 'quantity') OR entitlement_type IN ('preCommitment', 'pre-commitment')
           OR regexp_replace(lower(coalesce(entitlement_type, '')), '[^a-z]', '', 'g') IN ('license', 'quantity', 'cash', 'precommitment'))
    GROUP BY entitlement
))`, func(o ExportOptions) []any { return []any{string(o.Granularity), string(o.Basis)} }},
	// tally_focus_alloc: the shared charges of the export's basis
	// (cost_allocation's rows a rule split), keyed by focusAllocKey, each
	// to its receivers' parts in order: the first takes the rounding
	// remainder (the largest ratio, then the cost centre by name, as
	// cost_allocation does), and its ratio is 1 less the others' so the
	// ratios of a charge sum to 1 exactly (cost_allocation truncates them
	// to 12 decimals). A driver part carries the receiver's quantity of
	// the driver meter that month and its unit.
	{`SET VARIABLE tally_focus_alloc = (
WITH ca AS (
    SELECT *,
           row_number() OVER charge AS place,
           sum(ratio) OVER (PARTITION BY organization, month, currency, origin_project, origin_meter, origin_family, origin_payment_method, paid_as) AS ratios
    FROM cost_allocation
    WHERE basis = ? AND rule IS NOT NULL
    WINDOW charge AS (PARTITION BY organization, month, currency, origin_project, origin_meter, origin_family, origin_payment_method, paid_as
                      ORDER BY ratio DESC, cost_centre)
),
closes AS (
    -- the close whose cost centres a closed month reads, as cost_allocation
    SELECT organization, month, id
    FROM closed_months
    WHERE basis = ?
    QUALIFY row_number() OVER (PARTITION BY organization, month ORDER BY acted_at DESC, id DESC) = 1
),
drivers AS (
    SELECT DISTINCT ca.organization, ca.month, ca.cost_centre, ca.rule_version, r.driver_meter
    FROM ca
    LEFT JOIN closes c ON c.organization = ca.organization AND c.month = ca.month
    JOIN allocation_rules r ON r.version = ca.rule_version AND r.close_id IS NOT DISTINCT FROM c.id
    WHERE ca.method = 'driver'
),
driven AS (
    SELECT d.organization, d.month, d.cost_centre, d.rule_version,
           sum(ac.quantity) AS quantity,
           (SELECT min(nullif(unit, '')) FROM usage WHERE meter_name = d.driver_meter) AS unit
    FROM drivers d
    LEFT JOIN closes c ON c.organization = d.organization AND c.month = d.month
    JOIN allocation_cost_centres cc ON cc.cost_centre = d.cost_centre AND cc.close_id IS NOT DISTINCT FROM c.id
    JOIN allocation_charges ac ON ac.organization = d.organization AND ac.basis = ? AND ac.month = d.month
                              AND ac.project = cc.project AND ac.meter_name = d.driver_meter
    GROUP BY ALL
)
SELECT map_from_entries(coalesce(list((key, parts)), []))
FROM (
    SELECT ` + focusAllocKey("ca.organization", "strftime(ca.month, '%Y-%m')", "ca.currency", "ca.origin_project", "ca.origin_meter", "ca.origin_family", "ca.origin_payment_method", "ca.paid_as") + ` AS key,
           list({'cost_centre': ca.cost_centre,
                 'ratio': CAST(CASE WHEN ca.place = 1 THEN 1 - (ca.ratios - ca.ratio) ELSE ca.ratio END AS DECIMAL(38, 12)),
                 'method': ca.method, 'version': ca.rule_version,
                 'quantity': CAST(d.quantity AS DECIMAL(38, 12)), 'unit': d.unit} ORDER BY ca.place) AS parts
    FROM ca
    LEFT JOIN driven d ON d.organization = ca.organization AND d.month = ca.month AND d.cost_centre = ca.cost_centre
                      AND d.rule_version = ca.rule_version AND ca.method = 'driver'
    GROUP BY ALL
))`, func(o ExportOptions) []any { return []any{string(o.Basis), string(o.Basis), string(o.Basis)} }},
}

// focusAllocKey is the SQL of the key of a shared charge in
// tally_focus_alloc: organization, month (YYYY-MM), currency, project,
// meter, family, payment method and paid-as, the charge of
// allocation_charges.
func focusAllocKey(org, month, currency, project, meter, family, pm, paidAs string) string {
	parts := []string{org, month, currency, project, meter, family, pm, paidAs}
	for i, p := range parts {
		parts[i] = "coalesce(" + p + ", '')"
	}
	return "concat_ws(chr(31), " + strings.Join(parts, ", ") + ")"
}

// setFOCUS13Lookups sets focus13Lookups on conn.
func setFOCUS13Lookups(ctx context.Context, conn *sql.Conn, o ExportOptions) error {
	for _, l := range focus13Lookups {
		var args []any
		if l.args != nil {
			args = l.args(o)
		}
		if _, err := conn.ExecContext(ctx, l.query, args...); err != nil {
			return fmt.Errorf("FOCUS 1.3 lookups: %w", err)
		}
	}
	return nil
}

// focus13Queries return the FOCUS 1.3 Cost and Usage and Contract
// Commitment queries over the 1.2 rows base selects (the focus view's
// rows of one granularity and basis, its two parameters). Both read the
// contracts of focus13Lookups, which must be set, so every ContractApplied
// element names a commitment of the Contract Commitment dataset, with its
// contract.
func focus13Queries(base string) (cu, cc string) {
	with := `WITH f AS (` + base + `),
pm AS (
    SELECT id, display_name, type, start_date, end_date, created FROM payment_methods
)
`
	cu = with + `SELECT
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
    -- Strings go through jsonString; decimals are JSON numbers as they are.
    CASE WHEN CommitmentDiscountId IS NOT NULL THEN
        '{"Elements":[{"ContractID":' || coalesce(` + jsonString("map_extract_value(getvariable('tally_focus_contracts'), CommitmentDiscountId).contract") + `, 'null')
        || ',"ContractCommitmentID":' || ` + jsonString(focusCommitmentID("CommitmentDiscountId", "BillingCurrency")) + `
        || ',"ContractCommitmentAppliedCost":' || coalesce(CAST(x_Cost AS VARCHAR), 'null')
        || ',"ContractCommitmentAppliedQuantity":' || coalesce(CASE WHEN CommitmentDiscountCategory = 'Usage' THEN CAST(ConsumedQuantity AS VARCHAR) END, 'null')
        || ',"ContractCommitmentAppliedUnit":' || coalesce(CASE WHEN CommitmentDiscountCategory = 'Usage' AND ConsumedQuantity IS NOT NULL THEN ` + jsonString("ConsumedUnit") + ` END, 'null')
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
` + splitColumns() + `),
           CASE WHEN parts IS NOT NULL THEN
               '{"Elements":[{"AllocatedRatio":' || CAST(parts[i].ratio AS VARCHAR)
               || CASE WHEN parts[i].quantity IS NOT NULL THEN ',"UsageUnit":' || coalesce(` + jsonString("parts[i].unit") + `, '"Units"') || ',"UsageQuantity":' || CAST(parts[i].quantity AS VARCHAR) ELSE '' END
               || ',"x_Method":' || ` + jsonString("parts[i].method") + ` || ',"x_Rule":' || ` + jsonString("parts[i].version") + ` || '}]}'
           END AS AllocatedMethodDetails,
           CASE WHEN parts IS NOT NULL THEN parts[i].version || ' ' || parts[i].method END AS AllocatedMethodId,
           parts[i].cost_centre AS AllocatedResourceId,
           parts[i].cost_centre AS AllocatedResourceName,
           CASE WHEN parts IS NOT NULL THEN '{"tally/cost-centre":' || ` + jsonString("parts[i].cost_centre") + ` || '}' END AS AllocatedTags,
           -- the origin row's costs (the columns as read, not as replaced)
           -- and its id: the hash of what tells usage rows apart
           CASE WHEN parts IS NOT NULL THEN BilledCost END AS x_AllocationOriginBilledCost,
           CASE WHEN parts IS NOT NULL THEN EffectiveCost END AS x_AllocationOriginEffectiveCost,
           CASE WHEN parts IS NOT NULL THEN md5(CAST(row(x_Organization, x_Basis, x_Granularity, ChargePeriodStart, x_DateProcessed, BillingCurrency,
               BillingAccountId, SubAccountId, SkuId, SkuMeter, x_Family, x_PaidAs, x_EntitlementId, x_RunId, x_FetchedAt, x_Cost, ConsumedQuantity) AS VARCHAR)) END AS x_AllocationOriginId
    FROM (
        SELECT *, unnest(CASE WHEN parts IS NULL THEN [0] ELSE range(1, len(parts) + 1) END) AS i
        FROM (
            SELECT *, map_extract_value(getvariable('tally_focus_alloc'), ` + focusAllocKey("x_Organization",
		"strftime(CASE WHEN x_Basis = 'reported' THEN x_DateProcessed ELSE "+utcOf("ChargePeriodStart")+" END, '%Y-%m')",
		"BillingCurrency", "SubAccountId", "SkuMeter", "x_Family", "nullif(BillingAccountId, 'unassigned')", "x_PaidAs") + `) AS parts
            FROM f
        )
    )
) f
`

	cc = with + `, commitments AS (
    -- per currency: an entitlement drawn in two is two commitments
    SELECT CommitmentDiscountId AS entitlement,
           ` + focusCommitmentID("CommitmentDiscountId", "BillingCurrency") + ` AS commitment_id,
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
) p`
	return cu, cc
}

// focusCommitmentID is the SQL of the Contract Commitment id of the
// entitlement ent drawn in currency: the entitlement's id, followed by
// "/" and the currency when the entitlement is drawn in several
// (tally_focus_contracts), as ContractCommitmentId must be unique.
func focusCommitmentID(ent, currency string) string {
	return ent + ` || CASE WHEN map_extract_value(getvariable('tally_focus_contracts'), ` + ent + `).currencies > 1 THEN '/' || ` + currency + ` ELSE '' END`
}

// focusSplit are the costs and quantities of a row that split cost
// allocation divides among the receivers.
// ListCost and ContractedCost stay their unit price times the part's
// PricingQuantity, as FOCUS requires, where they are that on the origin;
// so their parts add up to the origin's within the rounding of 12
// decimals, where the others add up exactly.
var focusSplit = []string{"BilledCost", "EffectiveCost", "x_Cost",
	"ConsumedQuantity", "PricingQuantity", "CommitmentDiscountQuantity"}

// splitColumns is the REPLACE list that splits focusSplit: the part i of
// parts takes the column times its ratio, rounded to 12 decimals; the
// first takes what the others leave, so the parts add up to the column.
func splitColumns() string {
	var out []string
	for _, c := range focusSplit {
		out = append(out, `        CAST(CASE WHEN parts IS NULL THEN `+c+` ELSE `+splitPart(c)+` END AS DECIMAL(38, 12)) AS `+c)
	}
	for _, c := range [][2]string{{"ListCost", "ListUnitPrice"}, {"ContractedCost", "ContractedUnitPrice"}} {
		out = append(out, `        CAST(CASE WHEN parts IS NULL THEN `+c[0]+`
             WHEN ChargeClass IS DISTINCT FROM 'Correction' AND `+c[1]+` IS NOT NULL AND PricingQuantity IS NOT NULL
                 THEN CAST(`+c[1]+` * (`+splitPart("PricingQuantity")+`) AS DECIMAL(38, 12))
             ELSE `+splitPart(c[0])+` END AS DECIMAL(38, 12)) AS `+c[0])
	}
	return strings.Join(out, ",\n")
}

// splitPart is part i of the column c.
func splitPart(c string) string {
	return `CASE WHEN i = 1 THEN ` + c + ` - coalesce(list_sum(list_transform(parts[2:], q -> CAST(` + c + ` * q.ratio AS DECIMAL(38, 12)))), 0)
             ELSE CAST(` + c + ` * parts[i].ratio AS DECIMAL(38, 12)) END`
}

// jsonString is the SQL for the JSON string of the text expression e
// (null when e is): backslash, quote, newline, return and tab escaped.
// Other control characters do not occur in the ids and units it quotes;
// one that did would make invalid JSON, which focuscheck reports.
func jsonString(e string) string {
	return `'"' || replace(replace(replace(replace(replace(` + e + `, '\', '\\'), '"', '\"'), chr(10), '\n'), chr(13), '\r'), chr(9), '\t') || '"'`
}

// focusMetadata is FOCUS 1.3's metadata for one export: who generated it,
// the dataset instances, their schema's FOCUS version, and their recency.
type focusMetadata struct {
	DataGenerator    focusDataGenerator     `json:"DataGenerator"`
	DatasetInstances []focusDatasetInstance `json:"DatasetInstances"`
	Schemas          []focusSchema          `json:"Schemas"`
	Recency          []focusRecency         `json:"Recency"`
	// x_BillingPeriods: per billing period of Cost and Usage, whether it
	// is complete (closed) and when it last changed; x_Notes: why columns
	// are null (the manifest's focus section says the same).
	BillingPeriods []focusBillingPeriod `json:"x_BillingPeriods"`
	Notes          map[string]string    `json:"x_Notes"`
}

type focusDataGenerator struct {
	DataGenerator string `json:"DataGenerator"`
}

type focusDatasetInstance struct {
	DatasetInstanceID   string `json:"DatasetInstanceId"`
	DatasetInstanceName string `json:"DatasetInstanceName"`
	FocusDatasetID      string `json:"FocusDatasetId"`
}

type focusSchema struct {
	SchemaID          string `json:"SchemaId"`
	FocusVersion      string `json:"FocusVersion"`
	CreationDate      string `json:"CreationDate"`
	DatasetInstanceID string `json:"DatasetInstanceId"`
}

type focusRecency struct {
	DatasetInstanceID          string            `json:"DatasetInstanceId"`
	RecencyLastUpdated         string            `json:"RecencyLastUpdated"`
	DatasetInstanceLastUpdated *string           `json:"DatasetInstanceLastUpdated,omitempty"`
	DatasetInstanceComplete    *bool             `json:"DatasetInstanceComplete,omitempty"`
	TimeSectors                []focusTimeSector `json:"TimeSectors,omitempty"`
}

type focusTimeSector struct {
	TimeSectorStart       string `json:"TimeSectorStart"`
	TimeSectorEnd         string `json:"TimeSectorEnd"`
	TimeSectorComplete    bool   `json:"TimeSectorComplete"`
	TimeSectorLastUpdated string `json:"TimeSectorLastUpdated"`
}

type focusBillingPeriod struct {
	BillingPeriodStart string `json:"BillingPeriodStart"`
	BillingPeriodEnd   string `json:"BillingPeriodEnd"`
	Complete           bool   `json:"Complete"`
	LastUpdated        string `json:"LastUpdated"`
}

const focusTimeLayout = "2006-01-02T15:04:05Z"

// sectorStep is one time sector at the export's granularity. Week and
// year are refused for FOCUS before this (billing periods are months).
func sectorStep(g tally.Granularity) func(time.Time) time.Time {
	switch g {
	case tally.Hour:
		return func(t time.Time) time.Time { return t.Add(time.Hour) }
	case tally.Month:
		return func(t time.Time) time.Time { return t.AddDate(0, 1, 0) }
	}
	return func(t time.Time) time.Time { return t.AddDate(0, 0, 1) }
}

// buildFOCUSMetadata reads, over the Cost and Usage query, each billing
// period's completeness (a month closed for the export's basis and
// granularity is complete; any other is not) and when each time sector of
// it last changed: the latest load of its rows, or for a closed month the
// close.
//
// Only the billing periods in the folder (held, the months the manifest
// records) are described: a ranged export may hold some months only. cu
// is a query of the rows' periods, charge periods and x_FetchedAt.
func buildFOCUSMetadata(ctx context.Context, conn *sql.Conn, cu string, args []any, o ExportOptions, held map[string]monthManifest, now time.Time) (focusMetadata, error) {
	name := fmt.Sprintf("%s, %s", o.Granularity, o.Basis)
	cuID := fmt.Sprintf("tally-cost-and-usage-%s-%s", o.Granularity, o.Basis)
	ccID := fmt.Sprintf("tally-contract-commitment-%s-%s", o.Granularity, o.Basis)
	stamp := now.UTC().Format(focusTimeLayout)
	md := focusMetadata{
		DataGenerator: focusDataGenerator{DataGenerator: "Tally"},
		DatasetInstances: []focusDatasetInstance{
			{cuID, "Cost and Usage (" + name + ")", "CostAndUsage"},
			{ccID, "Contract Commitment (" + name + ")", "ContractCommitment"},
		},
		Schemas: []focusSchema{
			{cuID + "-" + FOCUS13, FOCUS13, stamp, cuID},
			{ccID + "-" + FOCUS13, FOCUS13, stamp, ccID},
		},
		Notes: focus13Nulls,
	}
	// One pass over the rows: the latest load per billing period and
	// charge sector; then which months are closed, and when. The rows are
	// grouped on their periods as they are, and only the groups are put
	// in UTC and cut to sectors: ICU's time zone functions on every row
	// were 12 of the pass's 15 s at 24M rows.
	trunc := map[tally.Granularity]string{tally.Hour: "hour", tally.Month: "month"}[o.Granularity]
	if trunc == "" {
		trunc = "day"
	}
	rows, err := conn.QueryContext(ctx, `WITH cu AS (`+cu+`)
SELECT timezone('UTC', period_start), timezone('UTC', period_end),
       date_trunc('`+trunc+`', timezone('UTC', charge_start)), max(fetched_at)
FROM (SELECT BillingPeriodStart AS period_start, BillingPeriodEnd AS period_end,
             ChargePeriodStart AS charge_start, max(x_FetchedAt) AS fetched_at
      FROM cu GROUP BY ALL)
GROUP BY ALL`, args...)
	if err != nil {
		return md, fmt.Errorf("FOCUS metadata: %w", err)
	}
	type period struct {
		start, end time.Time
		complete   bool
		last       time.Time
	}
	byStart := map[time.Time]*period{}
	latest := map[time.Time]time.Time{}
	for rows.Next() {
		var start, end, sector time.Time
		var last sql.NullTime
		if err := rows.Scan(&start, &end, &sector, &last); err != nil {
			rows.Close()
			return md, fmt.Errorf("FOCUS metadata: %w", err)
		}
		p := byStart[start.UTC()]
		if p == nil {
			p = &period{start: start.UTC(), end: end.UTC()}
			byStart[p.start] = p
		}
		if last.Valid {
			if last.Time.After(p.last) {
				p.last = last.Time
			}
			if last.Time.After(latest[sector.UTC()]) {
				latest[sector.UTC()] = last.Time
			}
		}
	}
	if err := rows.Close(); err != nil {
		return md, fmt.Errorf("FOCUS metadata: %w", err)
	}
	closes, err := conn.QueryContext(ctx, `SELECT CAST(month AS TIMESTAMP), acted_at FROM closed_months WHERE basis = ? AND granularity = ?`,
		string(o.Basis), string(o.Granularity))
	if err != nil {
		return md, fmt.Errorf("FOCUS metadata: %w", err)
	}
	for closes.Next() {
		var month, at time.Time
		if err := closes.Scan(&month, &at); err != nil {
			closes.Close()
			return md, fmt.Errorf("FOCUS metadata: %w", err)
		}
		if p := byStart[month.UTC()]; p != nil {
			p.complete = true
			if at.After(p.last) {
				p.last = at
			}
		}
	}
	if err := closes.Close(); err != nil {
		return md, fmt.Errorf("FOCUS metadata: %w", err)
	}
	var periods []period
	for _, p := range byStart {
		if _, ok := held[p.start.Format("2006-01")]; !ok {
			continue
		}
		if p.last.IsZero() {
			p.last = now
		}
		periods = append(periods, *p)
	}
	slices.SortFunc(periods, func(a, b period) int { return a.start.Compare(b.start) })
	step := sectorStep(o.Granularity)
	cuRecency := focusRecency{DatasetInstanceID: cuID, RecencyLastUpdated: stamp, TimeSectors: []focusTimeSector{}}
	lastAll := time.Time{}
	allComplete := len(periods) > 0
	for _, p := range periods {
		md.BillingPeriods = append(md.BillingPeriods, focusBillingPeriod{
			BillingPeriodStart: p.start.UTC().Format(focusTimeLayout), BillingPeriodEnd: p.end.UTC().Format(focusTimeLayout),
			Complete: p.complete, LastUpdated: p.last.UTC().Format(focusTimeLayout)})
		for s := p.start.UTC(); s.Before(p.end); s = step(s) {
			l, ok := latest[s]
			if !ok || p.complete {
				l = p.last
			}
			cuRecency.TimeSectors = append(cuRecency.TimeSectors, focusTimeSector{
				TimeSectorStart: s.Format(focusTimeLayout), TimeSectorEnd: step(s).Format(focusTimeLayout),
				TimeSectorComplete: p.complete, TimeSectorLastUpdated: l.UTC().Format(focusTimeLayout)})
		}
		if p.last.After(lastAll) {
			lastAll = p.last
		}
		allComplete = allComplete && p.complete
	}
	if lastAll.IsZero() {
		lastAll = now
	}
	// Contract Commitment is not a time series: one last-updated and one
	// completeness for the whole dataset. It is complete when every billing
	// period it is drawn from is.
	ccLast := lastAll.UTC().Format(focusTimeLayout)
	md.Recency = []focusRecency{cuRecency,
		{DatasetInstanceID: ccID, RecencyLastUpdated: stamp, DatasetInstanceLastUpdated: &ccLast, DatasetInstanceComplete: &allComplete}}
	return md, nil
}

// writeFOCUSMetadata replaces the FOCUS metadata file atomically.
func writeFOCUSMetadata(dir string, md focusMetadata) error {
	b, err := json.MarshalIndent(md, "", "  ")
	if err != nil {
		return err
	}
	err = atomicfile.Write(context.Background(), filepath.Join(dir, FOCUSMetadataName), fileMode, func(w io.Writer) error {
		_, err := w.Write(append(b, '\n'))
		return err
	})
	if err != nil {
		return fmt.Errorf("write FOCUS metadata: %w", err)
	}
	return nil
}

// finishFOCUS writes, after a FOCUS export's datasets, the FOCUS 1.3
// metadata and the manifest's focus section. A 1.2 export removes what a
// 1.3 export left in the folder (the Contract Commitment dataset, the
// metadata), so the folder holds one version.
func finishFOCUS(ctx context.Context, conn *sql.Conn, dir string, o ExportOptions, man *manifest, now time.Time, copying func(context.Context) (func(), error)) error {
	version := o.FOCUSVersion
	if version == "" {
		version = FOCUS13
	}
	if version == FOCUS12 {
		for _, name := range []string{focusCommitmentsDataset, focusCommitmentsCSVDataset} {
			if _, ok := man.Datasets[name]; !ok {
				continue
			}
			empty := dataset{name: name, partition: "start_month",
				query:    `SELECT CAST(NULL AS VARCHAR) AS start_month, CAST(NULL AS DECIMAL(38, 12)) AS x_AppliedCost, CAST(NULL AS TIMESTAMPTZ) AS x_LastChargePeriodEnd WHERE false`,
				costExpr: "x_AppliedCost", timeExpr: "x_LastChargePeriodEnd"}
			if _, err := exportDataset(ctx, conn, dir, empty, o, man, now, copying); err != nil {
				return err
			}
			delete(man.Datasets, name)
		}
		if err := os.Remove(filepath.Join(dir, FOCUSMetadataName)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		man.FOCUS = &focusManifest{Version: FOCUS12}
		return writeManifest(dir, man)
	}
	body, err := FOCUSQuery(ctx, conn)
	if err != nil {
		return err
	}
	// The periods, charge sectors and loads are read from the focus view's
	// rows, not the Cost and Usage rows: splitting a charge among cost
	// centres copies them to each part, so both give the same, and the
	// view's rows need no split of every row of the history.
	rows := `SELECT * FROM (` + body + `) WHERE x_Granularity = ? AND x_Basis = ?`
	args := []any{string(o.Granularity), string(o.Basis)}
	md, err := buildFOCUSMetadata(ctx, conn, rows, args, o, man.Datasets["focus"], now)
	if err != nil {
		return err
	}
	if err := writeFOCUSMetadata(dir, md); err != nil {
		return err
	}
	man.FOCUS = &focusManifest{Version: FOCUS13, Metadata: FOCUSMetadataName, Nulls: focus13Nulls}
	return writeManifest(dir, man)
}
