package focuscheck

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"
)

// Columns13 are the FOCUS 1.3 Cost and Usage columns of Tally's export:
// the 1.2 ones (ProviderName and PublisherName are deprecated in 1.3 but
// still mandatory) and those 1.3 adds that apply: ServiceProviderName,
// HostProviderName, ContractApplied (the service provider has contract
// commitments: entitlements) and the split cost allocation columns (Tally
// allocates cost to cost centres).
var Columns13 = append(slices.Clone(Columns),
	Column{"AllocatedMethodDetails", str, true}, Column{"AllocatedMethodId", str, true},
	Column{"AllocatedResourceId", str, true}, Column{"AllocatedResourceName", str, true},
	Column{"AllocatedTags", str, true}, Column{"ContractApplied", str, true},
	Column{"HostProviderName", str, true}, Column{"ServiceProviderName", str, false},
)

// allElements is a condition every object of the Elements array of the
// JSON column col meets (true when the column is null or not shaped so:
// other rules report that).
func allElements(col, cond string) string {
	return `coalesce(list_bool_and(list_transform(CASE WHEN json_valid(` + col + `) AND json_type(` + col + `, '$.Elements') = 'ARRAY' THEN json_extract(` + col + `, '$.Elements[*]') END, e -> ` + cond + `)), true)`
}

// jsonObject is the JsonObjectFormat shape with a top-level Elements array
// of one or more objects, as ContractApplied and AllocatedMethodDetails
// have; its rules are named after col.
func elementsRules(col string) []Rule {
	return []Rule{
		{col + " is a JSON object", col + ` IS NOT NULL AND (NOT json_valid(` + col + `) OR json_type(` + col + `) <> 'OBJECT')`},
		{col + " has a top-level Elements array", col + ` IS NOT NULL AND json_valid(` + col + `) AND json_type(` + col + `) = 'OBJECT' AND json_type(` + col + `, '$.Elements') IS DISTINCT FROM 'ARRAY'`},
		{col + " Elements is not empty", col + ` IS NOT NULL AND json_valid(` + col + `) AND json_type(` + col + `, '$.Elements') = 'ARRAY' AND json_array_length(` + col + `, '$.Elements') = 0`},
		{col + " Elements are objects", `NOT ` + allElements(col, `json_type(e) = 'OBJECT'`)},
		{col + " element values are not nested", `NOT ` + allElements(col, `json_type(e) <> 'OBJECT' OR coalesce(list_bool_and(list_transform(json_keys(e), k -> json_type(e, '$."' || k || '"') NOT IN ('OBJECT', 'ARRAY'))), true)`)},
	}
}

// Rule is a row rule: a requirement and the SQL condition that selects
// the rows breaking it.
type Rule struct{ Name, Bad string }

// customOrIn is true when every key of the JSON object e is one of keys or
// custom (x_).
func customOrIn(keys ...string) string {
	return `coalesce(list_bool_and(list_transform(json_keys(e), k -> starts_with(k, 'x_') OR ` + inList("k", keys) + `)), true)`
}

// num is the JSON type of a number.
func num(path string) string {
	return `coalesce(json_type(e, '` + path + `') IN ('UBIGINT', 'BIGINT', 'DOUBLE'), false)`
}

// Rules13 are the row rules of FOCUS 1.3 Cost and Usage: the 1.2 rules
// (with the third-party billing rule on ServiceProviderName, which
// replaces ProviderName) and the rules of the columns 1.3 adds.
var Rules13 = func() []Rule {
	var out []Rule
	for _, r := range Rules {
		if r.Name == "BilledCost is 0 where a third party invoices" {
			r.Bad = `InvoiceIssuerName <> ServiceProviderName AND BilledCost <> 0`
		}
		out = append(out, Rule(r))
	}
	out = append(out,
		Rule{"HostProviderName is set on usage", `ChargeCategory = 'Usage' AND HostProviderName IS NULL`},
		Rule{"ProviderName is ServiceProviderName (deprecated, kept for the transition)", `ProviderName IS DISTINCT FROM ServiceProviderName`},
	)
	out = append(out, elementsRules("ContractApplied")...)
	out = append(out,
		Rule{"ContractApplied elements have a ContractID and a ContractCommitmentID (strings)", `NOT ` + allElements("ContractApplied",
			`json_type(e) <> 'OBJECT' OR coalesce(json_type(e, '$.ContractID') = 'VARCHAR' AND json_type(e, '$.ContractCommitmentID') = 'VARCHAR', false)`)},
		Rule{"ContractApplied elements have an applied cost or an applied quantity", `NOT ` + allElements("ContractApplied",
			`json_type(e) <> 'OBJECT' OR `+num("$.ContractCommitmentAppliedCost")+` OR `+num("$.ContractCommitmentAppliedQuantity"))},
		Rule{"ContractApplied applied values are numbers or null", `NOT ` + allElements("ContractApplied",
			`json_type(e) <> 'OBJECT' OR ((json_type(e, '$.ContractCommitmentAppliedCost') IS NULL OR json_type(e, '$.ContractCommitmentAppliedCost') = 'NULL' OR `+num("$.ContractCommitmentAppliedCost")+`) AND (json_type(e, '$.ContractCommitmentAppliedQuantity') IS NULL OR json_type(e, '$.ContractCommitmentAppliedQuantity') = 'NULL' OR `+num("$.ContractCommitmentAppliedQuantity")+`))`)},
		Rule{"ContractCommitmentAppliedUnit is set exactly with an applied quantity", `NOT ` + allElements("ContractApplied",
			`json_type(e) <> 'OBJECT' OR ((`+num("$.ContractCommitmentAppliedQuantity")+`) = coalesce(json_type(e, '$.ContractCommitmentAppliedUnit') = 'VARCHAR', false))`)},
		Rule{"ContractApplied element keys are FOCUS-defined or custom (x_)", `NOT ` + allElements("ContractApplied",
			`json_type(e) <> 'OBJECT' OR `+customOrIn("ContractID", "ContractCommitmentID", "ContractCommitmentAppliedCost", "ContractCommitmentAppliedQuantity", "ContractCommitmentAppliedUnit"))},
	)
	// Split cost allocation: a charge is related to one exactly when it
	// has an AllocatedMethodId.
	out = append(out,
		Rule{"AllocatedMethodDetails is null when AllocatedMethodId is", `AllocatedMethodId IS NULL AND AllocatedMethodDetails IS NOT NULL`},
		Rule{"AllocatedResourceId is null when AllocatedMethodId is", `AllocatedMethodId IS NULL AND AllocatedResourceId IS NOT NULL`},
		Rule{"AllocatedResourceName is null exactly when AllocatedResourceId is", `(AllocatedResourceId IS NULL) <> (AllocatedResourceName IS NULL)`},
		Rule{"AllocatedTags is null when AllocatedMethodId is", `AllocatedMethodId IS NULL AND AllocatedTags IS NOT NULL`},
		Rule{"AllocatedTags is a key-value JSON object", `AllocatedTags IS NOT NULL AND (NOT json_valid(AllocatedTags) OR json_type(AllocatedTags) <> 'OBJECT' OR NOT coalesce(list_bool_and(list_transform(json_keys(AllocatedTags), k -> json_type(AllocatedTags, '$."' || k || '"') NOT IN ('OBJECT', 'ARRAY', 'NULL'))), true))`},
	)
	out = append(out, elementsRules("AllocatedMethodDetails")...)
	out = append(out,
		Rule{"AllocatedMethodDetails elements have a numeric AllocatedRatio", `NOT ` + allElements("AllocatedMethodDetails",
			`json_type(e) <> 'OBJECT' OR `+num("$.AllocatedRatio"))},
		Rule{"AllocatedMethodDetails elements with a UsageQuantity have a UsageUnit", `NOT ` + allElements("AllocatedMethodDetails",
			`json_type(e) <> 'OBJECT' OR json_type(e, '$.UsageQuantity') IS NULL OR coalesce(json_type(e, '$.UsageUnit') = 'VARCHAR', false)`)},
		Rule{"AllocatedMethodDetails UsageQuantity is a number", `NOT ` + allElements("AllocatedMethodDetails",
			`json_type(e) <> 'OBJECT' OR json_type(e, '$.UsageQuantity') IS NULL OR `+num("$.UsageQuantity"))},
		Rule{"AllocatedMethodDetails element keys are FOCUS-defined or custom (x_)", `NOT ` + allElements("AllocatedMethodDetails",
			`json_type(e) <> 'OBJECT' OR `+customOrIn("AllocatedRatio", "UsageUnit", "UsageQuantity"))},
		// Tally names each allocated charge's origin (x_AllocationOriginId)
		// and the origin's costs, so the group rules below can prove the
		// allocated charges are the origin, split.
		Rule{"an allocated charge names its origin charge, and only an allocated one", `(AllocatedMethodId IS NULL) <> (x_AllocationOriginId IS NULL)`},
		Rule{"an allocated charge carries its origin's costs", `x_AllocationOriginId IS NOT NULL AND (x_AllocationOriginBilledCost IS NULL OR x_AllocationOriginEffectiveCost IS NULL)`},
	)
	return out
}()

// ratioSum is the sum of a row's AllocatedRatio values.
const ratioSum = `list_sum(list_transform(json_extract(AllocatedMethodDetails, '$.Elements[*]'), e -> CAST(json_extract(e, '$.AllocatedRatio') AS DOUBLE)))`

// allocationDimensions are the dimensions every allocated charge keeps
// from its origin charge (the split changes only the amounts and the
// allocated columns).
var allocationDimensions = []string{"BillingAccountId", "BillingCurrency", "BillingPeriodStart", "ChargeCategory",
	"ChargeClass", "ChargePeriodStart", "ChargePeriodEnd", "CommitmentDiscountId", "InvoiceIssuerName", "RegionId",
	"ServiceName", "SkuId", "SkuPriceId", "SubAccountId", "AllocatedMethodId"}

// GroupRules13 are FOCUS 1.3's rules between the allocated charges of one
// origin charge: each names a requirement and a query over the rows
// (from is substituted for %s) counting the origin charges breaking it.
var GroupRules13 = []Rule{
	{"AllocatedRatio sums to 1 per origin charge", `SELECT count(*) FROM (SELECT x_AllocationOriginId FROM %s WHERE x_AllocationOriginId IS NOT NULL AND json_valid(AllocatedMethodDetails)
GROUP BY x_AllocationOriginId HAVING abs(sum(` + ratioSum + `) - 1) > 1e-9 OR count(` + ratioSum + `) < count(*))`},
	{"allocated charges sum to their origin's BilledCost and EffectiveCost", `SELECT count(*) FROM (SELECT x_AllocationOriginId FROM %s WHERE x_AllocationOriginId IS NOT NULL
GROUP BY x_AllocationOriginId HAVING count(DISTINCT x_AllocationOriginBilledCost) > 1 OR count(DISTINCT x_AllocationOriginEffectiveCost) > 1
    OR sum(BilledCost) <> any_value(x_AllocationOriginBilledCost) OR sum(EffectiveCost) <> any_value(x_AllocationOriginEffectiveCost))`},
	{"allocated charges keep their origin's dimensions", `SELECT count(*) FROM (SELECT x_AllocationOriginId FROM %s WHERE x_AllocationOriginId IS NOT NULL
GROUP BY x_AllocationOriginId HAVING count(DISTINCT (` + strings.Join(allocationDimensions, ", ") + `)) > 1)`},
	{"an origin charge is split into allocated charges to distinct resources", `SELECT count(*) FROM (SELECT x_AllocationOriginId FROM %s WHERE x_AllocationOriginId IS NOT NULL
GROUP BY x_AllocationOriginId HAVING count(AllocatedResourceId) <> count(DISTINCT AllocatedResourceId))`},
}

// Violations13 checks FOCUS 1.3 Cost and Usage rows, as Violations does
// for 1.2, adding the rules between an origin charge's allocated charges.
func Violations13(ctx context.Context, db *sql.DB, from string) ([]string, error) {
	out, ok, err := check(ctx, db, from, Columns13, Rules13, chargeNullable)
	if err != nil || !ok {
		return out, err
	}
	for _, r := range GroupRules13 {
		var n int64
		if err := db.QueryRowContext(ctx, fmt.Sprintf(r.Bad, from)).Scan(&n); err != nil {
			return nil, fmt.Errorf("check %q: %w", r.Name, err)
		}
		if n > 0 {
			out = append(out, fmt.Sprintf("%s: broken for %d origin charges", r.Name, n))
		}
	}
	return skuPrices(ctx, db, from, out)
}

// chargeNullable are the columns that may be null on a correction only.
var chargeNullable = []string{"ListUnitPrice", "ContractedUnitPrice", "PricingCategory", "SkuPriceId",
	"PricingQuantity", "PricingUnit", "ConsumedQuantity", "ConsumedUnit"}

// CommitmentColumns are the 13 mandatory columns of the FOCUS 1.3
// Contract Commitment dataset.
var CommitmentColumns = []Column{
	{"BillingCurrency", str, true}, {"ContractCommitmentCategory", str, false}, {"ContractCommitmentCost", dec, true},
	{"ContractCommitmentDescription", str, true}, {"ContractCommitmentId", str, false}, {"ContractCommitmentPeriodEnd", ts, false},
	{"ContractCommitmentPeriodStart", ts, false}, {"ContractCommitmentQuantity", dec, true}, {"ContractCommitmentType", str, false},
	{"ContractCommitmentUnit", str, true}, {"ContractId", str, false}, {"ContractPeriodEnd", ts, false},
	{"ContractPeriodStart", ts, false},
}

// CommitmentRules are the row rules of the Contract Commitment dataset.
var CommitmentRules = []Rule{
	{"ContractCommitmentCategory is Spend or Usage", `ContractCommitmentCategory NOT IN ('Spend', 'Usage')`},
	{"ContractCommitmentCost is set on a Spend commitment", `ContractCommitmentCategory = 'Spend' AND ContractCommitmentCost IS NULL`},
	{"ContractCommitmentQuantity is set on a Usage commitment", `ContractCommitmentCategory = 'Usage' AND ContractCommitmentQuantity IS NULL`},
	{"ContractCommitmentUnit is null exactly when ContractCommitmentQuantity is", `(ContractCommitmentUnit IS NULL) <> (ContractCommitmentQuantity IS NULL)`},
	{"BillingCurrency is set on a Spend commitment", `ContractCommitmentCategory = 'Spend' AND BillingCurrency IS NULL`},
	{"BillingCurrency is an ISO 4217 code", `BillingCurrency IS NOT NULL AND NOT ` + inList("BillingCurrency", Currencies)},
	{"ContractCommitmentPeriodEnd is after ContractCommitmentPeriodStart", `ContractCommitmentPeriodEnd <= ContractCommitmentPeriodStart`},
	{"ContractPeriodEnd is after ContractPeriodStart", `ContractPeriodEnd <= ContractPeriodStart`},
}

// InterfaceGaps are the Contract Commitment rules Tally's export cannot
// meet from the interface alone: it gives an entitlement's type but not
// its amount (what was bought), and FOCUS 1.3 allows no null amount on a
// Spend or Usage commitment. The config's commitments name the amounts;
// where they name none the export leaves the amount null rather than
// invent one, and x_CommitmentSource and its manifest say why;
// CommitmentViolations still reports these. A commitment the config
// names must meet them (ConfiguredViolations).
var InterfaceGaps = []string{
	"ContractCommitmentCost is set on a Spend commitment",
	"ContractCommitmentQuantity is set on a Usage commitment",
}

// configured selects the Contract Commitment rows whose amount the
// config names (x_CommitmentSource "config: …").
const configured = `starts_with(x_CommitmentSource, 'config: ')`

// ConfiguredViolations checks the InterfaceGaps rules on the Contract
// Commitment rows whose amount the config names: there Tally's export has
// the amount and must state it. It also checks that every row says where
// its amount comes from.
func ConfiguredViolations(ctx context.Context, db *sql.DB, from string) ([]string, error) {
	var out []string
	for _, r := range CommitmentRules {
		if !slices.Contains(InterfaceGaps, r.Name) {
			continue
		}
		var n int64
		if err := db.QueryRowContext(ctx, `SELECT count(*) FROM `+from+` WHERE `+configured+` AND (`+r.Bad+`)`).Scan(&n); err != nil {
			return nil, fmt.Errorf("check %q where the config names the commitment: %w", r.Name, err)
		}
		if n > 0 {
			out = append(out, fmt.Sprintf("%s where the config names the commitment: broken in %d rows", r.Name, n))
		}
	}
	var n int64
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM `+from+` WHERE NOT coalesce(`+configured+` OR starts_with(x_CommitmentSource, 'none: '), false)`).Scan(&n); err != nil {
		return nil, fmt.Errorf("check x_CommitmentSource: %w", err)
	}
	if n > 0 {
		out = append(out, fmt.Sprintf("x_CommitmentSource says config: or none: on every commitment: broken in %d rows", n))
	}
	return out, nil
}

// WithoutGaps returns the violations that are not InterfaceGaps.
func WithoutGaps(v []string) []string {
	var out []string
	for _, l := range v {
		if !slices.ContainsFunc(InterfaceGaps, func(g string) bool { return strings.HasPrefix(l, g+":") }) {
			out = append(out, l)
		}
	}
	return out
}

// CommitmentViolations checks a FOCUS 1.3 Contract Commitment dataset:
// its columns and types, nullability, allowed values, one row per
// ContractCommitmentId with one parent ContractId.
func CommitmentViolations(ctx context.Context, db *sql.DB, from string) ([]string, error) {
	out, ok, err := check(ctx, db, from, CommitmentColumns, CommitmentRules, nil)
	if err != nil || !ok {
		return out, err
	}
	var n int64
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM (SELECT ContractCommitmentId FROM `+from+` GROUP BY ALL HAVING count(*) > 1)`).Scan(&n); err != nil {
		return nil, err
	}
	if n > 0 {
		out = append(out, fmt.Sprintf("ContractCommitmentId is unique (one parent ContractId): broken for %d ids", n))
	}
	return out, nil
}

// ContractAppliedJoin checks that every ContractApplied element of the
// Cost and Usage rows usage names a commitment of the Contract Commitment
// rows commitments, under the same contract.
func ContractAppliedJoin(ctx context.Context, db *sql.DB, usage, commitments string) ([]string, error) {
	var missing, other int64
	err := db.QueryRowContext(ctx, `WITH e AS (
    SELECT json_extract_string(el, '$.ContractCommitmentID') AS id, json_extract_string(el, '$.ContractID') AS contract
    FROM (SELECT unnest(json_extract(ContractApplied, '$.Elements[*]')) AS el FROM `+usage+` WHERE ContractApplied IS NOT NULL)
)
SELECT count(*) FILTER (WHERE c.ContractCommitmentId IS NULL),
       count(*) FILTER (WHERE c.ContractCommitmentId IS NOT NULL AND c.ContractId IS DISTINCT FROM e.contract)
FROM e LEFT JOIN (SELECT DISTINCT ContractCommitmentId, ContractId FROM `+commitments+`) c ON c.ContractCommitmentId = e.id`).Scan(&missing, &other)
	if err != nil {
		return nil, fmt.Errorf("check ContractApplied against the commitments: %w", err)
	}
	var out []string
	if missing > 0 {
		out = append(out, fmt.Sprintf("ContractApplied names a commitment the Contract Commitment dataset has: broken in %d elements", missing))
	}
	if other > 0 {
		out = append(out, fmt.Sprintf("ContractApplied names the commitment's own contract: broken in %d elements", other))
	}
	return out, nil
}

// check is the column and row check both datasets share: every column
// with its type, nothing but FOCUS and custom (x_) columns, not-null
// columns (those in chargeOnly only on a charge that is not a
// correction), then the rules.
func check(ctx context.Context, db *sql.DB, from string, cols []Column, rules []Rule, chargeOnly []string) (out []string, columnsOK bool, err error) {
	types := map[string]string{}
	rows, err := db.QueryContext(ctx, `SELECT column_name, column_type FROM (DESCRIBE SELECT * FROM `+from+`)`)
	if err != nil {
		return nil, false, fmt.Errorf("describe %s: %w", from, err)
	}
	for rows.Next() {
		var n, t string
		if err := rows.Scan(&n, &t); err != nil {
			rows.Close()
			return nil, false, err
		}
		types[n] = t
	}
	if err := rows.Close(); err != nil {
		return nil, false, err
	}
	known := map[string]bool{}
	for _, c := range cols {
		known[c.Name] = true
		switch got, ok := types[c.Name]; {
		case !ok:
			out = append(out, fmt.Sprintf("column %s is missing", c.Name))
		case got != c.Type:
			out = append(out, fmt.Sprintf("column %s is %s, want %s", c.Name, got, c.Type))
		}
	}
	var names []string
	for n := range types {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if !known[n] && !strings.HasPrefix(n, "x_") && n != "billing_period" && n != "start_month" {
			out = append(out, fmt.Sprintf("column %s is neither FOCUS nor custom (x_)", n))
		}
	}
	if len(out) > 0 {
		return out, false, nil // the row rules need every column
	}
	// One pass over the rows counts every rule: a check per rule read the
	// dataset some sixty times.
	type cond struct{ name, bad, line string }
	var conds []cond
	for _, c := range cols {
		if c.Nullable {
			continue
		}
		bad := `"` + c.Name + `" IS NULL`
		if slices.Contains(chargeOnly, c.Name) {
			bad = charge + ` AND ` + bad
		}
		conds = append(conds, cond{c.Name, bad, "%s is null in %d rows"})
	}
	for _, r := range rules {
		conds = append(conds, cond{r.Name, r.Bad, "%s: broken in %d rows"})
	}
	counts := make([]string, len(conds))
	ns := make([]int64, len(conds))
	dest := make([]any, len(conds))
	for i, c := range conds {
		counts[i] = `count(*) FILTER (WHERE ` + c.bad + `)`
		dest[i] = &ns[i]
	}
	if err := db.QueryRowContext(ctx, `SELECT `+strings.Join(counts, ",\n")+` FROM `+from).Scan(dest...); err != nil {
		// A value one rule cannot read (malformed JSON, say) fails the
		// pass; rule by rule, the rules that guard against it still run.
		for i, c := range conds {
			if cerr := db.QueryRowContext(ctx, `SELECT count(*) FROM `+from+` WHERE `+c.bad).Scan(&ns[i]); cerr != nil {
				return nil, false, fmt.Errorf("check %q: %w", c.name, cerr)
			}
		}
	}
	for i, c := range conds {
		if ns[i] > 0 {
			out = append(out, fmt.Sprintf(c.line, c.name, ns[i]))
		}
	}
	return out, true, nil
}

// MetadataViolations checks FOCUS 1.3 metadata (the export's
// _focus_metadata.json): the data generator, each dataset instance with
// its schema and FOCUS version, and recency: one object per instance,
// time sectors for the time-series Cost and Usage dataset, completeness
// and last update for the Contract Commitment dataset, times in FOCUS's
// date/time format.
func MetadataViolations(b []byte, version string) []string {
	var md struct {
		DataGenerator *struct {
			DataGenerator *string
		}
		DatasetInstances []*struct {
			DatasetInstanceId, DatasetInstanceName, FocusDatasetId *string
		}
		Schemas []*struct {
			SchemaId, FocusVersion, DatasetInstanceId, CreationDate *string
		}
		Recency []*struct {
			DatasetInstanceId, RecencyLastUpdated, DatasetInstanceLastUpdated *string
			DatasetInstanceComplete                                           *bool
			TimeSectors                                                       []*struct {
				TimeSectorStart, TimeSectorEnd, TimeSectorLastUpdated *string
				TimeSectorComplete                                    *bool
			}
		}
	}
	if err := json.Unmarshal(b, &md); err != nil {
		return []string{"metadata is not a JSON object: " + err.Error()}
	}
	var out []string
	bad := func(format string, a ...any) { out = append(out, fmt.Sprintf(format, a...)) }
	isTime := func(s *string) bool {
		if s == nil {
			return false
		}
		_, err := time.Parse("2006-01-02T15:04:05Z", *s)
		return err == nil
	}
	if md.DataGenerator == nil || md.DataGenerator.DataGenerator == nil || *md.DataGenerator.DataGenerator == "" {
		bad("DataGenerator is an object naming the data generator")
	}
	kinds := map[string]string{}
	for _, d := range md.DatasetInstances {
		if d == nil || d.DatasetInstanceId == nil || d.FocusDatasetId == nil || d.DatasetInstanceName == nil {
			bad("DatasetInstances has an instance without id, name or FOCUS dataset")
			continue
		}
		if *d.FocusDatasetId != "CostAndUsage" && *d.FocusDatasetId != "ContractCommitment" {
			bad("DatasetInstance %s has FocusDatasetId %q", *d.DatasetInstanceId, *d.FocusDatasetId)
		}
		kinds[*d.DatasetInstanceId] = *d.FocusDatasetId
	}
	if len(kinds) == 0 {
		bad("DatasetInstances is empty")
	}
	schemas := map[string]bool{}
	for _, s := range md.Schemas {
		switch {
		case s == nil || s.DatasetInstanceId == nil || s.SchemaId == nil:
			bad("Schemas has a schema without id or dataset instance")
		case s.FocusVersion == nil || *s.FocusVersion != version:
			bad("Schema %s: FocusVersion is not %s", *s.SchemaId, version)
		case !isTime(s.CreationDate):
			bad("Schema %s: CreationDate is not a FOCUS date/time", *s.SchemaId)
		default:
			schemas[*s.DatasetInstanceId] = true
		}
	}
	recency := map[string]int{}
	if md.Recency == nil {
		bad("Recency is null")
	}
	for _, r := range md.Recency {
		if r == nil || r.DatasetInstanceId == nil {
			bad("Recency has a null object or one without DatasetInstanceId")
			continue
		}
		id := *r.DatasetInstanceId
		recency[id]++
		if !isTime(r.RecencyLastUpdated) {
			bad("Recency %s: RecencyLastUpdated is not a FOCUS date/time", id)
		}
		switch kinds[id] {
		case "CostAndUsage":
			if len(r.TimeSectors) == 0 {
				bad("Recency %s: a time series has TimeSectors, at least one", id)
			}
			for _, s := range r.TimeSectors {
				if s == nil || !isTime(s.TimeSectorStart) || !isTime(s.TimeSectorEnd) || !isTime(s.TimeSectorLastUpdated) || s.TimeSectorComplete == nil {
					bad("Recency %s: a time sector lacks start, end, completeness or last update, or a time is not a FOCUS date/time", id)
					break
				}
				if *s.TimeSectorEnd <= *s.TimeSectorStart {
					bad("Recency %s: time sector %s ends before it starts", id, *s.TimeSectorStart)
					break
				}
			}
		case "ContractCommitment":
			if r.DatasetInstanceComplete == nil || !isTime(r.DatasetInstanceLastUpdated) {
				bad("Recency %s: a dataset that is not a time series has DatasetInstanceComplete and DatasetInstanceLastUpdated", id)
			}
		default:
			bad("Recency %s: no such dataset instance", id)
		}
	}
	for id := range kinds {
		if !schemas[id] {
			bad("DatasetInstance %s has no schema", id)
		}
		if recency[id] != 1 {
			bad("DatasetInstance %s has %d recency objects, want 1", id, recency[id])
		}
	}
	sort.Strings(out)
	return out
}

// ExportViolations checks a FOCUS 1.3 export folder as Tally writes it:
// Cost and Usage (focus/), Contract Commitment
// (focus_contract_commitment/; the InterfaceGaps left out where the config
// names no commitment, see ConfiguredViolations), every
// ContractApplied element against the commitments, and the metadata
// (_focus_metadata.json).
func ExportViolations(ctx context.Context, db *sql.DB, dir string) ([]string, error) {
	parquet := func(name string) string {
		return `read_parquet('` + strings.ReplaceAll(filepath.Join(dir, name, "*", "*.parquet"), "'", "''") + `', hive_partitioning = true)`
	}
	cu := parquet("focus")
	out, err := Violations13(ctx, db, cu)
	if err != nil {
		return nil, err
	}
	if m, _ := filepath.Glob(filepath.Join(dir, "focus_contract_commitment", "*", "*.parquet")); len(m) > 0 {
		cc := parquet("focus_contract_commitment")
		v, err := CommitmentViolations(ctx, db, cc)
		if err != nil {
			return nil, err
		}
		out = append(out, WithoutGaps(v)...)
		if v, err = ConfiguredViolations(ctx, db, cc); err != nil {
			return nil, err
		}
		out = append(out, v...)
		if v, err = ContractAppliedJoin(ctx, db, cu, cc); err != nil {
			return nil, err
		}
		out = append(out, v...)
	} else {
		var n int64
		if err := db.QueryRowContext(ctx, `SELECT count(*) FROM `+cu+` WHERE ContractApplied IS NOT NULL`).Scan(&n); err != nil {
			return nil, err
		}
		if n > 0 {
			out = append(out, fmt.Sprintf("ContractApplied names a commitment the Contract Commitment dataset has: there is no such dataset, and %d rows name one", n))
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, "_focus_metadata.json"))
	if err != nil {
		return nil, err
	}
	return append(out, MetadataViolations(b, "1.3")...), nil
}
