package export

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tally-dev/tally"
	"github.com/tally-dev/tally/allocation"
	"github.com/tally-dev/tally/internal/testkit/chargebackcheck"
	"github.com/tally-dev/tally/internal/testkit/focuscheck"
	"github.com/tally-dev/tally/internal/testkit/storetest"
	"github.com/tally-dev/tally/store"
)

// focusSplit are the costs and quantities of a row that split cost
// allocation divides among the receivers (sql/focus13_cost_and_usage.sql),
// each to the last digit.
var focusSplit = []string{"BilledCost", "EffectiveCost", "x_Cost",
	"ConsumedQuantity", "PricingQuantity", "CommitmentDiscountQuantity"}

func parquetOf(dir, name string) string {
	return `read_parquet(` + quoted(filepath.Join(dir, name, "*", "*.parquet")) + `, hive_partitioning = true)`
}

// The default FOCUS export is 1.3: Cost and Usage passes every 1.3 rule,
// the Contract Commitment dataset every rule the interface lets it meet,
// every ContractApplied element joins to a commitment, and the metadata
// conforms. A 1.2 export into the same folder gives back the 1.2 rows and
// removes what only 1.3 has.
func TestExportFOCUS13(t *testing.T) {
	s, _ := exportFixture(t)
	ctx := context.Background()
	dir := t.TempDir()
	res := exportTo(t, s, Options{Dir: dir, Format: FormatFOCUS, CSV: true, Granularity: tally.Day, Basis: tally.BasisUsage})
	if d := datasetOf(t, res, focusCommitmentsDataset); d.Rows == 0 {
		t.Fatalf("no contract commitments: %+v", d)
	}
	cu, cc := parquetOf(dir, "focus"), parquetOf(dir, focusCommitmentsDataset)

	v, err := focuscheck.Violations13(ctx, s.DB(), cu)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range v {
		t.Errorf("FOCUS 1.3 Cost and Usage: %s", l)
	}
	v, err = focuscheck.CommitmentViolations(ctx, s.DB(), cc)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range focuscheck.WithoutGaps(v) {
		t.Errorf("FOCUS 1.3 Contract Commitment: %s", l)
	}
	// The gaps are there, named: the interface gives no amounts.
	if len(v) != len(focuscheck.InterfaceGaps) {
		t.Errorf("contract commitment violations %q, want exactly the interface gaps %q", v, focuscheck.InterfaceGaps)
	}
	v, err = focuscheck.ContractAppliedJoin(ctx, s.DB(), cu, cc)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range v {
		t.Errorf("join: %s", l)
	}
	b, err := os.ReadFile(filepath.Join(dir, FOCUSMetadataName))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range focuscheck.MetadataViolations(b, FOCUS13) {
		t.Errorf("metadata: %s", l)
	}
	var md focusMetadata
	if err := json.Unmarshal(b, &md); err != nil {
		t.Fatal(err)
	}
	// Day granularity: one time sector a day of each billing period, none
	// complete (no month is closed here; the closes package's test closes one).
	sectors := md.Recency[0].TimeSectors
	if len(sectors) != 31+30+31 || sectors[0].TimeSectorStart != "2026-08-01T00:00:00Z" || sectors[len(sectors)-1].TimeSectorEnd != "2026-11-01T00:00:00Z" {
		t.Errorf("%d time sectors, %+v … %+v", len(sectors), sectors[0], sectors[len(sectors)-1])
	}
	if len(md.BillingPeriods) != 3 || slices.ContainsFunc(md.BillingPeriods, func(p focusBillingPeriod) bool { return p.Complete }) {
		t.Errorf("billing periods %+v", md.BillingPeriods)
	}
	man, err := readManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	if man.FOCUS == nil || man.FOCUS.Version != FOCUS13 || man.FOCUS.Nulls["ContractCommitmentCost"] == "" {
		t.Errorf("manifest focus section %+v", man.FOCUS)
	}

	// Tally's mapping.
	org := storetest.RowsText(t, s, `SELECT id, name FROM organization`)
	rules := map[string]string{
		"the billing account is the organization":          `BillingAccountId || '|' || BillingAccountName <> '` + strings.ReplaceAll(org[0], "'", "''") + `' OR BillingAccountType <> 'Organization'`,
		"one provider for service, host, and the old name": `ServiceProviderName <> 'Media cloud' OR HostProviderName <> 'Media cloud' OR ProviderName <> 'Media cloud' OR PublisherName <> 'Media cloud'`,
		"ContractApplied exactly under a commitment":       `(ContractApplied IS NULL) <> (CommitmentDiscountId IS NULL)`,
		"ContractApplied names the entitlement":            `ContractApplied IS NOT NULL AND (json_extract_string(ContractApplied, '$.Elements[0].ContractCommitmentID') <> x_EntitlementId OR CAST(json_extract_string(ContractApplied, '$.Elements[0].ContractCommitmentAppliedCost') AS DECIMAL(38, 12)) <> x_Cost)`,
		"its contract is the payment method":               `ContractApplied IS NOT NULL AND json_extract_string(ContractApplied, '$.Elements[0].ContractID') <> x_PaymentMethodId`,
		"nothing allocated yet":                            `coalesce(AllocatedMethodId, AllocatedMethodDetails, AllocatedResourceId, AllocatedResourceName, AllocatedTags, x_AllocationOriginId) IS NOT NULL`,
	}
	for name, bad := range rules {
		if n := storetest.Count(t, s, `SELECT count(*) FROM `+cu+` WHERE `+bad); n > 0 {
			t.Errorf("%s: broken in %d rows (%s)", name, n, bad)
		}
	}
	// The 1.3 rows are the 1.2 rows, the payment method moved to x_.
	want := storetest.RowsText(t, s, `SELECT BillingCurrency, count(*), sum(BilledCost), sum(EffectiveCost), sum(x_Cost), count(DISTINCT BillingAccountId), count(CommitmentDiscountId) FROM focus WHERE x_Granularity = 'day' AND x_Basis = 'usage' GROUP BY ALL ORDER BY ALL`)
	got := storetest.RowsText(t, s, `SELECT BillingCurrency, count(*), sum(BilledCost), sum(EffectiveCost), sum(x_Cost), count(DISTINCT coalesce(x_PaymentMethodId, 'unassigned')), count(CommitmentDiscountId) FROM `+cu+` GROUP BY ALL ORDER BY ALL`)
	storetest.EqualLines(t, "1.3 rows against 1.2 rows per currency", got, want)
	// Every entitlement of a known type is a commitment, with what its
	// rows drew from it.
	want = storetest.RowsText(t, s, `SELECT CommitmentDiscountId, sum(x_Cost) FROM focus WHERE x_Granularity = 'day' AND x_Basis = 'usage' AND CommitmentDiscountId IS NOT NULL GROUP BY ALL ORDER BY ALL`)
	got = storetest.RowsText(t, s, `SELECT ContractCommitmentId, x_AppliedCost FROM `+cc+` ORDER BY ALL`)
	storetest.EqualLines(t, "commitments and what was drawn", got, want)
	if got := strings.Join(distinct(t, s, "ContractCommitmentCategory", cc), "|"); got != "Spend|Usage" {
		t.Errorf("commitment categories %q", got)
	}

	// Back to 1.2 in the same folder: the focus view's rows, and nothing
	// only 1.3 writes.
	res = exportTo(t, s, Options{Dir: dir, Format: FormatFOCUS, Granularity: tally.Day, Basis: tally.BasisUsage, FOCUSVersion: FOCUS12})
	if len(res.Datasets) != 1 {
		t.Errorf("1.2 datasets %+v", res.Datasets)
	}
	v, err = focuscheck.Violations(ctx, s.DB(), cu)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range v {
		t.Errorf("FOCUS 1.2 after 1.3: %s", l)
	}
	for _, gone := range []string{FOCUSMetadataName, focusCommitmentsDataset} {
		if _, err := os.Stat(filepath.Join(dir, gone)); err == nil {
			if entries, _ := os.ReadDir(filepath.Join(dir, gone)); len(entries) > 0 || gone == FOCUSMetadataName {
				t.Errorf("%s is still there after a 1.2 export", gone)
			}
		} else if !errors.Is(err, fs.ErrNotExist) {
			t.Fatal(err)
		}
	}
	if _, err := Write(ctx, s, Options{Dir: dir, Format: FormatFOCUS, Granularity: tally.Day, Basis: tally.BasisUsage, FOCUSVersion: "1.1"}); err == nil || !strings.Contains(err.Error(), `FOCUS version "1.1" is not one of 1.3, 1.2`) {
		t.Errorf("version 1.1: %v", err)
	}
}

// brokenCopy copies the rows from selects into a temp table and applies
// change (an UPDATE's SET list) to one row: the first that where selects.
func brokenCopy(t *testing.T, s *store.Store, from, name, change string, where ...string) string {
	t.Helper()
	ctx := context.Background()
	table := "broken_" + strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			return r
		}
		return '_'
	}, strings.ToLower(name))
	if _, err := s.DB().ExecContext(ctx, `CREATE OR REPLACE TEMP TABLE `+table+` AS SELECT * FROM `+from); err != nil {
		t.Fatal(err)
	}
	if change != "" {
		cond := "true"
		if len(where) > 0 {
			cond = where[0]
		}
		if _, err := s.DB().ExecContext(ctx, `UPDATE `+table+` SET `+change+` WHERE rowid = (SELECT min(rowid) FROM `+table+` WHERE `+cond+`)`); err != nil {
			t.Fatal(err)
		}
	}
	return table
}

func wantViolation(t *testing.T, v []string, want string) {
	t.Helper()
	if !slices.ContainsFunc(v, func(l string) bool { return strings.HasPrefix(l, want+": broken") }) {
		t.Errorf("violations %q, want %q", v, want)
	}
}

// Each FOCUS 1.3 rule the checker holds fails on a dataset broken that
// way: Cost and Usage rows, the Contract Commitment dataset, the join
// between them, and split cost allocation, which is first shown to pass
// when done right.
func TestFOCUS13CheckerFindsBrokenRows(t *testing.T) {
	s, _ := exportFixture(t)
	ctx := context.Background()
	dir := t.TempDir()
	exportTo(t, s, Options{Dir: dir, Format: FormatFOCUS, Granularity: tally.Day, Basis: tally.BasisUsage})
	cu, cc := parquetOf(dir, "focus"), parquetOf(dir, focusCommitmentsDataset)
	// Some of the rows once in a table (each case copies it: all of them
	// made this test three times slower), with and without ContractApplied.
	if _, err := s.DB().ExecContext(ctx, `CREATE TEMP TABLE focus13 AS
(SELECT * FROM `+cu+` WHERE ContractApplied IS NOT NULL ORDER BY ChargePeriodStart, x_Cost LIMIT 100)
UNION ALL
(SELECT * FROM `+cu+` WHERE ContractApplied IS NULL AND BilledCost > 0 ORDER BY ChargePeriodStart, x_Cost LIMIT 100)`); err != nil {
		t.Fatal(err)
	}
	under, cu := "focus13", "focus13"
	applied := func(elem string) string { return `ContractApplied = '{"Elements": [` + elem + `]}'` }
	for _, c := range []struct{ name, change, want string }{
		{"service provider null", `ServiceProviderName = NULL`, ""},
		{"marketplace billed", `BilledCost = 1, InvoiceIssuerName = 'Some marketplace'`, "BilledCost is 0 where a third party invoices"},
		{"host missing", `HostProviderName = NULL`, "HostProviderName is set on usage"},
		{"provider differs", `ProviderName = 'Other'`, "ProviderName is ServiceProviderName (deprecated, kept for the transition)"},
		{"applied not json", `ContractApplied = 'x'`, "ContractApplied is a JSON object"},
		{"applied without elements", `ContractApplied = '{"Items": []}'`, "ContractApplied has a top-level Elements array"},
		{"applied empty", applied(``), "ContractApplied Elements is not empty"},
		{"applied element not object", applied(`1`), "ContractApplied Elements are objects"},
		{"applied nested", applied(`{"ContractID": "c", "ContractCommitmentID": "e", "ContractCommitmentAppliedCost": 1, "x_More": {"a": 1}}`), "ContractApplied element values are not nested"},
		{"applied without commitment", applied(`{"ContractID": "c", "ContractCommitmentAppliedCost": 1}`), "ContractApplied elements have a ContractID and a ContractCommitmentID (strings)"},
		{"applied without amounts", applied(`{"ContractID": "c", "ContractCommitmentID": "e", "ContractCommitmentAppliedCost": null}`), "ContractApplied elements have an applied cost or an applied quantity"},
		{"applied cost a string", applied(`{"ContractID": "c", "ContractCommitmentID": "e", "ContractCommitmentAppliedCost": "1", "ContractCommitmentAppliedQuantity": 2, "ContractCommitmentAppliedUnit": "GB"}`), "ContractApplied applied values are numbers or null"},
		{"applied unit without quantity", applied(`{"ContractID": "c", "ContractCommitmentID": "e", "ContractCommitmentAppliedCost": 1, "ContractCommitmentAppliedUnit": "GB"}`), "ContractCommitmentAppliedUnit is set exactly with an applied quantity"},
		{"applied custom key", applied(`{"ContractID": "c", "ContractCommitmentID": "e", "ContractCommitmentAppliedCost": 1, "Balance": 3}`), "ContractApplied element keys are FOCUS-defined or custom (x_)"},
		{"details without method", `AllocatedMethodDetails = '{"Elements": [{"AllocatedRatio": 1}]}'`, "AllocatedMethodDetails is null when AllocatedMethodId is"},
		{"resource without method", `AllocatedResourceId = 'cc-1'`, "AllocatedResourceId is null when AllocatedMethodId is"},
		{"resource name without id", `AllocatedResourceName = 'Marketing'`, "AllocatedResourceName is null exactly when AllocatedResourceId is"},
		{"resource id without name", `AllocatedMethodId = 'm', x_AllocationOriginId = 'o', x_AllocationOriginBilledCost = BilledCost, x_AllocationOriginEffectiveCost = EffectiveCost, AllocatedResourceId = 'cc-1'`, "AllocatedResourceName is null exactly when AllocatedResourceId is"},
		{"tags without method", `AllocatedTags = '{"x_CostCentre": "Marketing"}'`, "AllocatedTags is null when AllocatedMethodId is"},
		{"tags nested", `AllocatedMethodId = 'm', x_AllocationOriginId = 'o', x_AllocationOriginBilledCost = BilledCost, x_AllocationOriginEffectiveCost = EffectiveCost, AllocatedTags = '{"x_CostCentre": {"name": "Marketing"}}'`, "AllocatedTags is a key-value JSON object"},
		{"details an array", `AllocatedMethodId = 'm', x_AllocationOriginId = 'o', x_AllocationOriginBilledCost = BilledCost, x_AllocationOriginEffectiveCost = EffectiveCost, AllocatedMethodDetails = '[1]'`, "AllocatedMethodDetails is a JSON object"},
		{"details without elements", `AllocatedMethodId = 'm', x_AllocationOriginId = 'o', x_AllocationOriginBilledCost = BilledCost, x_AllocationOriginEffectiveCost = EffectiveCost, AllocatedMethodDetails = '{"Ratios": [1]}'`, "AllocatedMethodDetails has a top-level Elements array"},
		{"details empty", `AllocatedMethodId = 'm', x_AllocationOriginId = 'o', x_AllocationOriginBilledCost = BilledCost, x_AllocationOriginEffectiveCost = EffectiveCost, AllocatedMethodDetails = '{"Elements": []}'`, "AllocatedMethodDetails Elements is not empty"},
		{"details element not object", `AllocatedMethodId = 'm', x_AllocationOriginId = 'o', x_AllocationOriginBilledCost = BilledCost, x_AllocationOriginEffectiveCost = EffectiveCost, AllocatedMethodDetails = '{"Elements": [0.5]}'`, "AllocatedMethodDetails Elements are objects"},
		{"details nested", `AllocatedMethodId = 'm', x_AllocationOriginId = 'o', x_AllocationOriginBilledCost = BilledCost, x_AllocationOriginEffectiveCost = EffectiveCost, AllocatedMethodDetails = '{"Elements": [{"AllocatedRatio": 1, "x_Driver": [1, 2]}]}'`, "AllocatedMethodDetails element values are not nested"},
		{"ratio missing", `AllocatedMethodId = 'm', x_AllocationOriginId = 'o', x_AllocationOriginBilledCost = BilledCost, x_AllocationOriginEffectiveCost = EffectiveCost, AllocatedMethodDetails = '{"Elements": [{"UsageUnit": "GB"}]}'`, "AllocatedMethodDetails elements have a numeric AllocatedRatio"},
		{"quantity without unit", `AllocatedMethodId = 'm', x_AllocationOriginId = 'o', x_AllocationOriginBilledCost = BilledCost, x_AllocationOriginEffectiveCost = EffectiveCost, AllocatedMethodDetails = '{"Elements": [{"AllocatedRatio": 1, "UsageQuantity": 3}]}'`, "AllocatedMethodDetails elements with a UsageQuantity have a UsageUnit"},
		{"quantity a string", `AllocatedMethodId = 'm', x_AllocationOriginId = 'o', x_AllocationOriginBilledCost = BilledCost, x_AllocationOriginEffectiveCost = EffectiveCost, AllocatedMethodDetails = '{"Elements": [{"AllocatedRatio": 1, "UsageUnit": "GB", "UsageQuantity": "3"}]}'`, "AllocatedMethodDetails UsageQuantity is a number"},
		{"details custom key", `AllocatedMethodId = 'm', x_AllocationOriginId = 'o', x_AllocationOriginBilledCost = BilledCost, x_AllocationOriginEffectiveCost = EffectiveCost, AllocatedMethodDetails = '{"Elements": [{"AllocatedRatio": 1, "Driver": "GB"}]}'`, "AllocatedMethodDetails element keys are FOCUS-defined or custom (x_)"},
		{"allocated without origin", `AllocatedMethodId = 'm'`, "an allocated charge names its origin charge, and only an allocated one"},
		{"origin without costs", `AllocatedMethodId = 'm', x_AllocationOriginId = 'o'`, "an allocated charge carries its origin's costs"},
	} {
		t.Run(c.name, func(t *testing.T) {
			v, err := focuscheck.Violations13(ctx, s.DB(), brokenCopy(t, s, under, c.name, c.change))
			if err != nil {
				t.Fatal(err)
			}
			if c.want == "" {
				if !slices.Contains(v, "ServiceProviderName is null in 1 rows") {
					t.Errorf("violations %q", v)
				}
				return
			}
			wantViolation(t, v, c.want)
		})
	}

	// Contract Commitment.
	for _, c := range []struct{ name, change, want string }{
		{"category", `ContractCommitmentCategory = 'Other'`, "ContractCommitmentCategory is Spend or Usage"},
		{"unit without quantity", `ContractCommitmentUnit = 'GB'`, "ContractCommitmentUnit is null exactly when ContractCommitmentQuantity is"},
		{"spend without currency", `ContractCommitmentCategory = 'Spend', BillingCurrency = NULL`, "BillingCurrency is set on a Spend commitment"},
		{"currency", `BillingCurrency = 'EURO'`, "BillingCurrency is an ISO 4217 code"},
		{"commitment period", `ContractCommitmentPeriodEnd = ContractCommitmentPeriodStart`, "ContractCommitmentPeriodEnd is after ContractCommitmentPeriodStart"},
		{"contract period", `ContractPeriodEnd = ContractPeriodStart - INTERVAL 1 DAY`, "ContractPeriodEnd is after ContractPeriodStart"},
		{"spend amount", `ContractCommitmentCategory = 'Spend', ContractCommitmentCost = NULL`, "ContractCommitmentCost is set on a Spend commitment"},
		{"usage amount", `ContractCommitmentCategory = 'Usage', ContractCommitmentQuantity = NULL, ContractCommitmentUnit = NULL`, "ContractCommitmentQuantity is set on a Usage commitment"},
	} {
		t.Run("commitment "+c.name, func(t *testing.T) {
			v, err := focuscheck.CommitmentViolations(ctx, s.DB(), brokenCopy(t, s, cc, "cc "+c.name, c.change))
			if err != nil {
				t.Fatal(err)
			}
			wantViolation(t, v, c.want)
		})
	}
	for _, c := range []struct{ from, want string }{
		{`(SELECT * EXCLUDE (ContractId) FROM ` + cc + `)`, "column ContractId is missing"},
		{`(SELECT * REPLACE (CAST(ContractCommitmentCost AS DOUBLE) AS ContractCommitmentCost) FROM ` + cc + `)`, "column ContractCommitmentCost is DOUBLE, want DECIMAL(38,12)"},
		{`(SELECT *, 1 AS Balance FROM ` + cc + `)`, "column Balance is neither FOCUS nor custom (x_)"},
	} {
		if v, err := focuscheck.CommitmentViolations(ctx, s.DB(), c.from); err != nil || !slices.Contains(v, c.want) {
			t.Errorf("%s: %q, %v", c.want, v, err)
		}
	}
	v, err := focuscheck.CommitmentViolations(ctx, s.DB(), brokenCopy(t, s, cc, "cc id null", `ContractCommitmentId = NULL`))
	if err != nil || !slices.Contains(v, "ContractCommitmentId is null in 1 rows") {
		t.Errorf("null commitment id: %q, %v", v, err)
	}
	dup := brokenCopy(t, s, cc, "cc dup", "")
	if _, err := s.DB().ExecContext(ctx, `INSERT INTO `+dup+` SELECT * REPLACE ('other contract' AS ContractId) FROM `+dup+` LIMIT 1`); err != nil {
		t.Fatal(err)
	}
	if v, err := focuscheck.CommitmentViolations(ctx, s.DB(), dup); err != nil || !slices.ContainsFunc(v, func(l string) bool {
		return strings.HasPrefix(l, "ContractCommitmentId is unique (one parent ContractId): broken for 1 ids")
	}) {
		t.Errorf("duplicate commitment: %q, %v", v, err)
	}
	// The join: a commitment left out, and one under another contract.
	v, err = focuscheck.ContractAppliedJoin(ctx, s.DB(), cu, `(SELECT * FROM `+cc+` WHERE ContractCommitmentCategory = 'Spend')`)
	if err != nil || len(v) != 1 || !strings.HasPrefix(v[0], "ContractApplied names a commitment the Contract Commitment dataset has: broken in ") {
		t.Errorf("missing commitments: %q, %v", v, err)
	}
	v, err = focuscheck.ContractAppliedJoin(ctx, s.DB(), cu, `(SELECT * REPLACE ('x' AS ContractId) FROM `+cc+`)`)
	if err != nil || len(v) != 1 || !strings.HasPrefix(v[0], "ContractApplied names the commitment's own contract: broken in ") {
		t.Errorf("other contract: %q, %v", v, err)
	}

	// Split cost allocation: the first row split to two cost centres,
	// 1/4 and 3/4, by a driver; the other rows as they are. It passes.
	origin := `(SELECT * FROM ` + cu + ` WHERE BilledCost > 0 ORDER BY ChargePeriodStart, x_Cost LIMIT 1)`
	split := `(SELECT * FROM ` + cu + ` WHERE (ChargePeriodStart, x_Cost, SkuId) NOT IN (SELECT (ChargePeriodStart, x_Cost, SkuId) FROM ` + origin + `)
UNION ALL BY NAME
SELECT o.* REPLACE (
        CAST(o.BilledCost * a.r AS DECIMAL(38, 12)) + CASE WHEN a.last THEN o.BilledCost - CAST(o.BilledCost * 0.25 AS DECIMAL(38, 12)) - CAST(o.BilledCost * 0.75 AS DECIMAL(38, 12)) ELSE 0 END AS BilledCost,
        CAST(o.EffectiveCost * a.r AS DECIMAL(38, 12)) + CASE WHEN a.last THEN o.EffectiveCost - CAST(o.EffectiveCost * 0.25 AS DECIMAL(38, 12)) - CAST(o.EffectiveCost * 0.75 AS DECIMAL(38, 12)) ELSE 0 END AS EffectiveCost,
        'tally-driver' AS AllocatedMethodId,
        '{"Elements": [{"AllocatedRatio": ' || a.r || ', "UsageUnit": "Minutes", "UsageQuantity": ' || (a.r * 400) || '}]}' AS AllocatedMethodDetails,
        a.cc AS AllocatedResourceId, a.cc AS AllocatedResourceName,
        '{"x_CostCentre": "' || a.cc || '"}' AS AllocatedTags,
        'origin-1' AS x_AllocationOriginId,
        o.BilledCost AS x_AllocationOriginBilledCost, o.EffectiveCost AS x_AllocationOriginEffectiveCost)
FROM ` + origin + ` o, (VALUES (0.25, 'Marketing', false), (0.75, 'Sales', true)) a(r, cc, last))`
	if n := storetest.Count(t, s, `SELECT count(*) FROM `+split+` WHERE x_AllocationOriginId IS NOT NULL`); n != 2 {
		t.Fatalf("the split has %d allocated charges, want 2", n)
	}
	if v, err := focuscheck.Violations13(ctx, s.DB(), split); err != nil || len(v) > 0 {
		t.Fatalf("a split done right: %q, %v", v, err)
	}
	for _, c := range []struct{ name, change, want string }{
		{"ratios sum over 1", `AllocatedMethodDetails = '{"Elements": [{"AllocatedRatio": 0.5}]}'`, "AllocatedRatio sums to 1 per origin charge"},
		{"cost lost", `BilledCost = BilledCost - 0.01`, "allocated charges sum to their origin's BilledCost and EffectiveCost"},
		{"dimension changed", `SkuId = 'other'`, "allocated charges keep their origin's dimensions"},
		{"same resource twice", `AllocatedResourceId = 'Sales'`, "an origin charge is split into allocated charges to distinct resources"},
	} {
		t.Run("split "+c.name, func(t *testing.T) {
			table := brokenCopy(t, s, split, "split "+c.name, c.change, `AllocatedResourceId = 'Marketing'`)
			v, err := focuscheck.Violations13(ctx, s.DB(), table)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.ContainsFunc(v, func(l string) bool { return strings.HasPrefix(l, c.want+": broken for 1 origin charges") }) {
				t.Errorf("violations %q, want %q", v, c.want)
			}
		})
	}
}

// Chargeback as FOCUS 1.3 split cost allocation: every row of a charge a
// rule shares (every method: fixed, even, proportional, driver, and a
// driver nobody used falling back) is replaced by one row per receiving
// cost centre. The export passes the 1.3 check; per origin row the ratios
// sum to exactly 1 and the parts to the origin's costs exactly; and the
// export's totals are those of the same export without allocation.
func TestExportFOCUS13SplitCostAllocation(t *testing.T) {
	ctx := context.Background()
	f := newChargebackFixture(t)
	o := Options{Format: FormatFOCUS, Granularity: tally.Day, Basis: tally.BasisUsage}
	o.Dir = t.TempDir()
	before := parquetOf(exportTo(t, f.s, o).Dir, "focus")
	if err := allocation.Set(ctx, f.s, chargebackcheck.Rules()); err != nil {
		t.Fatal(err)
	}
	o.Dir = t.TempDir()
	after := parquetOf(exportTo(t, f.s, o).Dir, "focus")

	v, err := focuscheck.ExportViolations(ctx, f.s.DB(), o.Dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range v {
		t.Errorf("FOCUS 1.3 with split cost allocation: %s", l)
	}
	// Every method was exported, the driver with its usage.
	methods := storetest.Strings(t, f.s, `SELECT DISTINCT json_extract_string(AllocatedMethodDetails, '$.Elements[0].x_Method') FROM `+after+` WHERE AllocatedMethodId IS NOT NULL ORDER BY 1`)
	if !slices.Equal(methods, []string{"driver", "even", "fixed", "proportional"}) {
		t.Errorf("methods exported %v, want driver, even, fixed, proportional", methods)
	}
	if n := storetest.Count(t, f.s, `SELECT count(*) FROM `+after+` WHERE AllocatedMethodId LIKE 'egress@2026-08 driver'
  AND (json_extract_string(AllocatedMethodDetails, '$.Elements[0].UsageUnit') IS NULL OR CAST(json_extract_string(AllocatedMethodDetails, '$.Elements[0].UsageQuantity') AS DECIMAL(38, 12)) <= 0)`); n > 0 {
		t.Errorf("%d driver rows without the receiver's driver usage", n)
	}
	if n := storetest.Count(t, f.s, `SELECT count(*) FROM `+after+` WHERE json_extract_string(AllocatedMethodDetails, '$.Elements[0].UsageQuantity') IS NOT NULL`); n == 0 {
		t.Error("no driver row carries UsageQuantity")
	}
	// Exactly: ratios as decimals sum to 1; every cost and quantity of the
	// parts sums to the origin's.
	if bad := storetest.RowsText(t, f.s, `SELECT x_AllocationOriginId, sum(CAST(json_extract_string(AllocatedMethodDetails, '$.Elements[0].AllocatedRatio') AS DECIMAL(38, 12))) AS ratios,
       sum(BilledCost), any_value(x_AllocationOriginBilledCost), sum(EffectiveCost), any_value(x_AllocationOriginEffectiveCost)
FROM `+after+` WHERE x_AllocationOriginId IS NOT NULL GROUP BY 1
HAVING ratios <> 1 OR sum(BilledCost) <> any_value(x_AllocationOriginBilledCost) OR sum(EffectiveCost) <> any_value(x_AllocationOriginEffectiveCost) LIMIT 5`); len(bad) > 0 {
		t.Errorf("origins whose parts are not the origin: %v", bad)
	}
	// Against the export without allocation: the rows not split are as
	// they were, each origin row's parts sum to it in every cost and
	// quantity (but list and contracted cost, unit price × the part's
	// quantity), and so the totals are unchanged.
	cols := strings.Join(focusSplit, ", ")
	sums := make([]string, len(focusSplit))
	for i, c := range focusSplit {
		sums[i] = "sum(" + c + ") AS " + c
	}
	missing := storetest.Count(t, f.s, `SELECT count(*) FROM (
    (SELECT x_Organization, ChargePeriodStart, SubAccountId, SkuId, BillingAccountId, x_PaidAs, x_EntitlementId, x_Family, BillingCurrency, `+cols+` FROM `+before+`)
    EXCEPT ALL
    (SELECT x_Organization, ChargePeriodStart, SubAccountId, SkuId, BillingAccountId, x_PaidAs, x_EntitlementId, x_Family, BillingCurrency, `+cols+` FROM `+after+` WHERE x_AllocationOriginId IS NULL
     UNION ALL
     SELECT x_Organization, ChargePeriodStart, SubAccountId, SkuId, BillingAccountId, x_PaidAs, x_EntitlementId, x_Family, BillingCurrency, `+strings.Join(sums, ", ")+`
     FROM `+after+` WHERE x_AllocationOriginId IS NOT NULL GROUP BY x_AllocationOriginId, x_Organization, ChargePeriodStart, SubAccountId, SkuId, BillingAccountId, x_PaidAs, x_EntitlementId, x_Family, BillingCurrency))`)
	if missing > 0 {
		t.Errorf("%d rows of the export without allocation are neither kept nor the sum of their parts", missing)
	}
	total := `SELECT BillingCurrency, ` + strings.Join(sums, ", ") + ` FROM %s GROUP BY 1 ORDER BY 1`
	b, a := storetest.RowsText(t, f.s, fmt.Sprintf(total, before)), storetest.RowsText(t, f.s, fmt.Sprintf(total, after))
	if !slices.Equal(a, b) {
		t.Errorf("totals per currency changed by allocation:\nwithout %v\nwith    %v", b, a)
	}
	// List and contracted cost: within the rounding of 12 decimals, a
	// 10^-12 per part at most.
	drift := `SELECT BillingCurrency, sum(ListCost) AS l, sum(ContractedCost) AS c, count(*) AS n FROM %s GROUP BY 1`
	if bad := storetest.RowsText(t, f.s, `SELECT a.BillingCurrency, a.l - b.l, a.c - b.c FROM (`+fmt.Sprintf(drift, after)+`) a JOIN (`+fmt.Sprintf(drift, before)+`) b USING (BillingCurrency)
WHERE abs(a.l - b.l) > a.n * 0.000000000001 OR abs(a.c - b.c) > a.n * 0.000000000001`); len(bad) > 0 {
		t.Errorf("list or contracted cost moved by more than rounding: %v", bad)
	}
	t.Logf("list and contracted cost, with minus without allocation: %v", storetest.RowsText(t, f.s, `SELECT a.BillingCurrency, a.l - b.l, a.c - b.c FROM (`+fmt.Sprintf(drift, after)+`) a JOIN (`+fmt.Sprintf(drift, before)+`) b USING (BillingCurrency)`))
	split := storetest.Count(t, f.s, `SELECT count(DISTINCT x_AllocationOriginId) FROM `+after)
	rows := storetest.Count(t, f.s, `SELECT count(*) FROM `+after)
	t.Logf("%d rows without allocation; %d with, %d origin rows split", storetest.Count(t, f.s, `SELECT count(*) FROM `+before), rows, split)
	if split == 0 {
		t.Error("nothing split")
	}
}

// An entitlement whose charges come in two currencies (the interface gives
// a currency per row) is one commitment per currency: every amount of the
// Contract Commitment dataset is in its row's BillingCurrency, each the sum
// of the charges that name it, and the ids stay unique.
func TestFOCUS13CommitmentPerCurrency(t *testing.T) {
	s, _ := exportFixture(t)
	ctx := context.Background()
	// Twenty of a license entitlement's charges again in EUR, as an
	// interface that bills one entitlement in two currencies sends them.
	ent := storetest.RowsText(t, s, `SELECT min(entitlement) FROM usage WHERE entitlement_type = 'license' AND currency = 'USD' AND granularity = 'day' AND basis = 'usage' AND cost > 0`)[0]
	if _, err := s.DB().ExecContext(ctx, `INSERT INTO usage SELECT u.* REPLACE ('EUR' AS currency, NULL AS key_id)
FROM usage u WHERE entitlement = ? AND granularity = 'day' AND basis = 'usage' AND cost > 0
QUALIFY row_number() OVER (ORDER BY date DESC, project, meter_name) <= 20`, ent); err != nil {
		t.Fatal(err)
	}
	if err := s.KeyUsage(ctx); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	exportTo(t, s, Options{Dir: dir, Format: FormatFOCUS, Granularity: tally.Day, Basis: tally.BasisUsage})
	v, err := focuscheck.ExportViolations(ctx, s.DB(), dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range v {
		t.Errorf("FOCUS 1.3 with an entitlement in two currencies: %s", l)
	}
	cu, cc := parquetOf(dir, "focus"), parquetOf(dir, focusCommitmentsDataset)
	got := storetest.RowsText(t, s, `SELECT ContractCommitmentId, BillingCurrency, x_AppliedCost, ContractCommitmentDescription FROM `+cc+` WHERE ContractCommitmentId LIKE ? ORDER BY ALL`, ent+"%")
	want := storetest.RowsText(t, s, `SELECT CommitmentDiscountId || '/' || BillingCurrency, BillingCurrency, sum(x_Cost), 'license entitlement ' || CommitmentDiscountId || ' on payment method ' || any_value(x_PaymentMethodName) || ', drawn in ' || BillingCurrency
FROM `+cu+` WHERE CommitmentDiscountId = ? GROUP BY CommitmentDiscountId, BillingCurrency ORDER BY ALL`, ent)
	if len(want) != 2 || !strings.HasPrefix(want[0], ent+"/EUR|EUR|") || strings.Contains(want[0], "|EUR|0.000000000000|") {
		t.Fatalf("the entitlement's charges are not in two currencies with some cost in EUR: %v", want)
	}
	storetest.EqualLines(t, "the entitlement's commitments, one per currency", got, want)
	// Every commitment's amount is the sum of the charges that name it,
	// all in its currency.
	if n := storetest.Count(t, s, `WITH applied AS (
    SELECT json_extract_string(ContractApplied, '$.Elements[0].ContractCommitmentID') AS id, BillingCurrency, x_Cost FROM `+cu+` WHERE ContractApplied IS NOT NULL
)
SELECT count(*) FROM `+cc+` c
WHERE c.x_AppliedCost IS DISTINCT FROM (SELECT sum(x_Cost) FROM applied a WHERE a.id = c.ContractCommitmentId)
   OR EXISTS (SELECT 1 FROM applied a WHERE a.id = c.ContractCommitmentId AND a.BillingCurrency <> c.BillingCurrency)`); n > 0 {
		t.Errorf("%d commitments state an amount other than the sum of their charges in their currency", n)
	}
	// An entitlement in one currency keeps its own id.
	if n := storetest.Count(t, s, `SELECT count(*) FROM `+cc+` WHERE ContractCommitmentId NOT LIKE '%/%'`); n == 0 {
		t.Error("no commitment kept the entitlement's id")
	}
}
