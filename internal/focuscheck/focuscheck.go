// Package focuscheck checks FinOps FOCUS 1.2 and 1.3 datasets, as DuckDB reads them,
// against the specification's normative (MUST) rules that apply to a usage
// feed whose sub-accounts are projects, whose price list is a rate card and
// whose commitment discounts are entitlements: the columns present with
// their types, nullability, allowed values, ISO 4217 currencies,
// non-negative prices and quantities, the conditional rules between
// columns, and one SkuId per SkuPriceId across rows. Tally's tests run it over every FOCUS export they make, and
// count an export's rows of a closed month with it (Export); it is not
// shipped in the binary.
package focuscheck

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
)

// Column is a FOCUS column the export holds, the DuckDB type it reads back
// as from Parquet, and whether it may be null on a usage row that is not a
// correction.
type Column struct {
	Name, Type string
	Nullable   bool
}

const (
	dec = "DECIMAL(38,12)"
	str = "VARCHAR"
	ts  = "TIMESTAMP WITH TIME ZONE"
)

// Columns are the FOCUS 1.2 columns of Tally's export: the mandatory ones
// and the conditional ones the rest of the dataset makes apply (it claims
// commitment discounts, regions, price lists and sub-accounts).
var Columns = []Column{
	{"BilledCost", dec, false}, {"BillingAccountId", str, false}, {"BillingAccountName", str, true},
	{"BillingAccountType", str, false}, {"BillingCurrency", str, false}, {"BillingPeriodEnd", ts, false},
	{"BillingPeriodStart", ts, false}, {"ChargeCategory", str, false}, {"ChargeClass", str, true},
	{"ChargeDescription", str, true}, {"ChargeFrequency", str, false}, {"ChargePeriodEnd", ts, false},
	{"ChargePeriodStart", ts, false}, {"CommitmentDiscountCategory", str, true}, {"CommitmentDiscountId", str, true},
	{"CommitmentDiscountName", str, true}, {"CommitmentDiscountQuantity", dec, true}, {"CommitmentDiscountStatus", str, true},
	{"CommitmentDiscountType", str, true}, {"CommitmentDiscountUnit", str, true}, {"ConsumedQuantity", dec, false},
	{"ConsumedUnit", str, false}, {"ContractedCost", dec, false}, {"ContractedUnitPrice", dec, false},
	{"EffectiveCost", dec, false}, {"InvoiceIssuerName", str, false}, {"ListCost", dec, false},
	{"ListUnitPrice", dec, false}, {"PricingCategory", str, false}, {"PricingQuantity", dec, false},
	{"PricingUnit", str, false}, {"ProviderName", str, false}, {"PublisherName", str, false},
	{"RegionId", str, true}, {"RegionName", str, true}, {"ServiceCategory", str, false},
	{"ServiceName", str, false}, {"SkuId", str, false}, {"SkuMeter", str, false},
	{"SkuPriceDetails", str, true}, {"SkuPriceId", str, false}, {"SubAccountId", str, true},
	{"SubAccountName", str, true}, {"SubAccountType", str, true},
}

// ServiceCategories are FOCUS 1.2's allowed ServiceCategory values.
var ServiceCategories = []string{"AI and Machine Learning", "Analytics", "Business Applications", "Compute",
	"Databases", "Developer Tools", "Multicloud", "Identity", "Integration", "Internet of Things",
	"Management and Governance", "Media", "Migration", "Mobile", "Networking", "Security", "Storage", "Web", "Other"}

// Currencies are the active ISO 4217 codes.
var Currencies = strings.Fields(`AED AFN ALL AMD ANG AOA ARS AUD AWG AZN BAM BBD BDT BGN BHD BIF BMD BND BOB BRL
BSD BTN BWP BYN BZD CAD CDF CHF CLP CNY COP CRC CUP CVE CZK DJF DKK DOP DZD EGP ERN ETB EUR FJD FKP GBP
GEL GHS GIP GMD GNF GTQ GYD HKD HNL HTG HUF IDR ILS INR IQD IRR ISK JMD JOD JPY KES KGS KHR KMF KPW KRW
KWD KYD KZT LAK LBP LKR LRD LSL LYD MAD MDL MGA MKD MMK MNT MOP MRU MUR MVR MWK MXN MYR MZN NAD NGN NIO
NOK NPR NZD OMR PAB PEN PGK PHP PKR PLN PYG QAR RON RSD RUB RWF SAR SBD SCR SDG SEK SGD SHP SLE SOS SRD
SSP STN SVC SYP SZL THB TJS TMT TND TOP TRY TTD TWD TZS UAH UGX USD UYU UZS VED VES VND VUV WST XAF XCD
XCG XOF XPF YER ZAR ZMW ZWG`)

func inList(col string, vals []string) string {
	q := make([]string, len(vals))
	for i, v := range vals {
		q[i] = "'" + strings.ReplaceAll(v, "'", "''") + "'"
	}
	return col + " IN (" + strings.Join(q, ", ") + ")"
}

// charge is a Usage or Purchase row that is not a correction: the rows
// most conditional rules are about.
const charge = `(ChargeCategory IN ('Usage', 'Purchase') AND ChargeClass IS DISTINCT FROM 'Correction')`

// Rules are the row rules: each names a requirement and the SQL condition
// that selects the rows breaking it.
var Rules = []struct{ Name, Bad string }{
	{"ChargeCategory is an allowed value", `ChargeCategory NOT IN ('Usage', 'Purchase', 'Tax', 'Credit', 'Adjustment')`},
	{"ChargeClass is null or Correction", `ChargeClass IS NOT NULL AND ChargeClass <> 'Correction'`},
	{"ChargeFrequency is an allowed value", `ChargeFrequency NOT IN ('One-Time', 'Recurring', 'Usage-Based')`},
	{"CommitmentDiscountStatus is Used or Unused", `CommitmentDiscountStatus NOT IN ('Used', 'Unused')`},
	{"CommitmentDiscountCategory is Spend or Usage", `CommitmentDiscountCategory NOT IN ('Spend', 'Usage')`},
	{"PricingCategory is an allowed value", `PricingCategory NOT IN ('Standard', 'Dynamic', 'Committed', 'Other')`},
	{"ServiceCategory is an allowed value", `NOT ` + inList("ServiceCategory", ServiceCategories)},
	{"BillingCurrency is an ISO 4217 code", `NOT ` + inList("BillingCurrency", Currencies)},
	{"ChargePeriodEnd is after ChargePeriodStart", `ChargePeriodEnd <= ChargePeriodStart`},
	{"BillingPeriodEnd is after BillingPeriodStart", `BillingPeriodEnd <= BillingPeriodStart`},
	{"BilledCost is 0 where a third party invoices", `InvoiceIssuerName <> ProviderName AND BilledCost <> 0`},
	{"ListUnitPrice is not null on a charge", charge + ` AND ListUnitPrice IS NULL`},
	{"ContractedUnitPrice is not null on a charge", charge + ` AND ContractedUnitPrice IS NULL`},
	{"PricingQuantity is not null on a charge", charge + ` AND PricingQuantity IS NULL`},
	{"PricingCategory is not null on a charge", charge + ` AND PricingCategory IS NULL`},
	{"SkuPriceId is not null on a charge", charge + ` AND SkuPriceId IS NULL`},
	{"ListUnitPrice is not negative", `ListUnitPrice < 0`},
	{"ContractedUnitPrice is not negative", `ContractedUnitPrice < 0`},
	{"PricingQuantity is not negative on a charge", charge + ` AND PricingQuantity < 0`},
	{"ConsumedQuantity is not negative on a charge", charge + ` AND ConsumedQuantity < 0`},
	{"ListCost is ListUnitPrice × PricingQuantity", `ChargeClass IS DISTINCT FROM 'Correction' AND ListUnitPrice IS NOT NULL AND PricingQuantity IS NOT NULL AND ListCost <> CAST(ListUnitPrice * PricingQuantity AS DECIMAL(38, 12))`},
	{"ContractedCost is ContractedUnitPrice × PricingQuantity", `ChargeClass IS DISTINCT FROM 'Correction' AND ContractedUnitPrice IS NOT NULL AND PricingQuantity IS NOT NULL AND ContractedCost <> CAST(ContractedUnitPrice * PricingQuantity AS DECIMAL(38, 12))`},
	{"PricingUnit is null exactly when PricingQuantity is", `(PricingUnit IS NULL) <> (PricingQuantity IS NULL)`},
	{"ConsumedUnit is null exactly when ConsumedQuantity is", `(ConsumedUnit IS NULL) <> (ConsumedQuantity IS NULL)`},
	{"CommitmentDiscountCategory is null exactly when CommitmentDiscountId is", `(CommitmentDiscountCategory IS NULL) <> (CommitmentDiscountId IS NULL)`},
	{"CommitmentDiscountType is null when CommitmentDiscountId is", `CommitmentDiscountId IS NULL AND CommitmentDiscountType IS NOT NULL`},
	{"CommitmentDiscountName is null when CommitmentDiscountId is", `CommitmentDiscountId IS NULL AND CommitmentDiscountName IS NOT NULL`},
	{"CommitmentDiscountStatus is null when CommitmentDiscountId is", `CommitmentDiscountId IS NULL AND CommitmentDiscountStatus IS NOT NULL`},
	{"CommitmentDiscountStatus is set on usage under a commitment", `CommitmentDiscountId IS NOT NULL AND ChargeCategory = 'Usage' AND CommitmentDiscountStatus IS NULL`},
	{"CommitmentDiscountQuantity is set on a charge under a commitment", charge + ` AND CommitmentDiscountId IS NOT NULL AND CommitmentDiscountQuantity IS NULL`},
	{"CommitmentDiscountQuantity is null without a commitment", `CommitmentDiscountId IS NULL AND CommitmentDiscountQuantity IS NOT NULL`},
	{"CommitmentDiscountUnit is null exactly when CommitmentDiscountQuantity is", `(CommitmentDiscountUnit IS NULL) <> (CommitmentDiscountQuantity IS NULL)`},
	{"PricingCategory is Committed exactly under a commitment", charge + ` AND ChargeCategory = 'Usage' AND (PricingCategory = 'Committed') <> (CommitmentDiscountId IS NOT NULL)`},
	{"SkuPriceDetails is null when SkuPriceId is", `SkuPriceId IS NULL AND SkuPriceDetails IS NOT NULL`},
	{"SkuPriceDetails is a JSON object", `SkuPriceDetails IS NOT NULL AND (NOT json_valid(SkuPriceDetails) OR json_type(SkuPriceDetails) <> 'OBJECT')`},
	{"SkuPriceDetails values are not objects or arrays", `SkuPriceDetails IS NOT NULL AND json_valid(SkuPriceDetails) AND NOT list_bool_and(list_transform(json_keys(SkuPriceDetails), k -> json_type(SkuPriceDetails, '$."' || k || '"') NOT IN ('OBJECT', 'ARRAY')))`},
	{"SkuPriceDetails keys are custom (x_)", `SkuPriceDetails IS NOT NULL AND json_valid(SkuPriceDetails) AND NOT list_bool_and(list_transform(json_keys(SkuPriceDetails), k -> starts_with(k, 'x_')))`},
	{"RegionName is null exactly when RegionId is", `(RegionName IS NULL) <> (RegionId IS NULL)`},
	{"SubAccountName is set with a SubAccountId", `SubAccountId IS NOT NULL AND SubAccountName IS NULL`},
	{"SubAccountType is set exactly with a SubAccountId", `(SubAccountType IS NULL) <> (SubAccountId IS NULL)`},
}

// Violations checks the FOCUS rows that the DuckDB table expression from
// selects (e.g. read_parquet(…)) and returns one line per requirement
// broken, with how many rows break it; none when the dataset conforms.
func Violations(ctx context.Context, db *sql.DB, from string) ([]string, error) {
	rules := make([]Rule, len(Rules))
	for i, r := range Rules {
		rules[i] = Rule(r)
	}
	out, ok, err := check(ctx, db, from, Columns, rules, chargeNullable)
	if err != nil || !ok {
		return out, err
	}
	return skuPrices(ctx, db, from, out)
}

// skuPrices appends to out the dataset rule between rows: a SkuPriceId
// names one SkuId (Tally claims no commitment discount flexibility, the
// one exception FOCUS makes).
func skuPrices(ctx context.Context, db *sql.DB, from string, out []string) ([]string, error) {
	var n int64
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM (SELECT SkuPriceId FROM `+from+` WHERE SkuPriceId IS NOT NULL
GROUP BY SkuPriceId HAVING count(DISTINCT SkuId) > 1)`).Scan(&n); err != nil {
		return nil, fmt.Errorf("check SkuPriceId against SkuId: %w", err)
	}
	if n > 0 {
		out = append(out, fmt.Sprintf("a SkuPriceId names one SkuId: broken for %d SkuPriceIds", n))
	}
	return out, nil
}
