package export

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tally-dev/tally"
	"github.com/tally-dev/tally/configs"
	"github.com/tally-dev/tally/internal/testkit/focuscheck"
	"github.com/tally-dev/tally/internal/testkit/storetest"
	"github.com/tally-dev/tally/store"
)

// The config's commitments give the FOCUS 1.3 Contract Commitment rows
// that they name their amount (ContractCommitmentCost, or
// ContractCommitmentQuantity and Unit) and period, so those rows meet the
// rules the interface alone cannot; the rows they do not name keep null
// amounts, and the manifest and metadata say why, commitment by
// commitment, and name the config's entries no exported charge draws on.
func TestExportFOCUS13ConfiguredCommitments(t *testing.T) {
	s, _ := exportFixture(t)
	ctx := context.Background()
	// The fixture's commitments, by category: id, currency, unit.
	of := func(category string) [][]string {
		var out [][]string
		for _, l := range storetest.RowsText(t, s, `SELECT CommitmentDiscountId, any_value(BillingCurrency), min(ConsumedUnit) FROM focus
WHERE x_Granularity = 'day' AND x_Basis = 'usage' AND CommitmentDiscountCategory = ? GROUP BY ALL ORDER BY ALL`, category) {
			out = append(out, strings.Split(l, "|"))
		}
		return out
	}
	spends, usages := of("Spend"), of("Usage")
	if len(spends) < 2 || len(usages) < 2 {
		t.Fatalf("the fixture needs two commitments of each category: spend %v, usage %v", spends, usages)
	}
	spend, usage := spends[0], usages[0]
	mistyped, unnamed := spends[1], usages[1]
	cfg, err := configs.Parse([]byte(fmt.Sprintf(`usage:
  start: 2026-01-01
commitments:
  - entitlement: %s
    name: Encoding pool
    type: spend
    amount: 120000.50
    currency: %s
    start: 2026-01-01
    end: 2026-12-31
  - entitlement: %s
    type: usage
    quantity: 500000.125
    unit: Minutes
    start: 2026-08-01
    end: 2027-07-31
  - entitlement: ent-not-loaded
    type: spend
    amount: 5
    currency: USD
    start: 2026-01-01
    end: 2026-12-31
  - entitlement: %s
    type: usage
    quantity: 10
    unit: GB
    start: 2026-01-01
    end: 2026-12-31
`, spend[0], spend[1], usage[0], mistyped[0])), t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	exportTo(t, s, Options{Dir: dir, Format: FormatFOCUS, CSV: true, Granularity: tally.Day, Basis: tally.BasisUsage, Commitments: cfg.Commitments})

	// The export conforms: where the config names a commitment the amount
	// is there, so only the unnamed ones are forgiven the gap.
	v, err := focuscheck.ExportViolations(ctx, s.DB(), dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range v {
		t.Errorf("FOCUS 1.3 with configured commitments: %s", l)
	}
	cc := parquetOf(dir, focusCommitmentsDataset)
	if v, err := focuscheck.ConfiguredViolations(ctx, s.DB(), brokenCopy(t, s, cc, "cc configured cost lost", `ContractCommitmentCost = NULL`,
		`starts_with(x_CommitmentSource, 'config: ') AND ContractCommitmentCategory = 'Spend'`)); err != nil ||
		!slices.Contains(v, "ContractCommitmentCost is set on a Spend commitment where the config names the commitment: broken in 1 rows") {
		t.Errorf("a configured spend commitment without its amount: %q, %v", v, err)
	}
	if v, err := focuscheck.ConfiguredViolations(ctx, s.DB(), brokenCopy(t, s, cc, "cc no source", `x_CommitmentSource = NULL`)); err != nil ||
		!slices.Contains(v, "x_CommitmentSource says config: or none: on every commitment: broken in 1 rows") {
		t.Errorf("a commitment without its source: %q, %v", v, err)
	}

	row := func(id string) string {
		t.Helper()
		got := storetest.RowsText(t, s, `SELECT BillingCurrency, ContractCommitmentCategory, ContractCommitmentCost, ContractCommitmentQuantity, ContractCommitmentUnit,
       strftime(timezone('UTC', ContractCommitmentPeriodStart), '%Y-%m-%d %H:%M'), strftime(timezone('UTC', ContractCommitmentPeriodEnd), '%Y-%m-%d %H:%M'),
       x_CommitmentName, x_CommitmentSource
FROM `+cc+` WHERE ContractCommitmentId = ?`, id)
		if len(got) != 1 {
			t.Fatalf("commitment %s: %d rows", id, len(got))
		}
		return got[0]
	}
	for _, c := range []struct{ what, id, want string }{
		{"spend", spend[0], spend[1] + "|Spend|120000.500000000000|NULL|NULL|2026-01-01 00:00|2027-01-01 00:00|Encoding pool|config: commitments[0] (Encoding pool), 2026-01-01 to 2026-12-31"},
		{"usage", usage[0], usage[1] + "|Usage|NULL|500000.125000000000|Minutes|2026-08-01 00:00|2027-08-01 00:00|NULL|config: commitments[1], 2026-08-01 to 2027-07-31"},
	} {
		if got := row(c.id); got != c.want {
			t.Errorf("%s commitment %s:\n got %s\nwant %s", c.what, c.id, got, c.want)
		}
	}
	// Not named, or named as what it is not: nothing invented, the period
	// the contract's, as without config.
	for _, id := range []string{mistyped[0], unnamed[0]} {
		if got := row(id); !strings.Contains(got, "|NULL|NULL|NULL|") {
			t.Errorf("commitment %s has an amount the config does not give it: %s", id, got)
		}
	}
	if n := storetest.Count(t, s, `SELECT count(*) FROM `+cc+` WHERE ContractCommitmentPeriodStart <> ContractPeriodStart AND NOT starts_with(x_CommitmentSource, 'config: ')`); n > 0 {
		t.Errorf("%d commitments the config does not name have a period other than their contract's", n)
	}

	// What the workbook's Commitments sheet says was drawn
	// (store.CommitmentDraws) is what the Contract Commitment says was
	// applied, by the same macros: for terms spanning every loaded day,
	// drawn to date through the last month is the export's applied cost
	// (spend) or quantity (usage).
	last := storetest.RowsText(t, s, `SELECT strftime(max(ChargePeriodStart), '%Y-%m-01') FROM focus WHERE x_Granularity = 'day' AND x_Basis = 'usage'`)
	lastMonth, err := time.Parse(tally.DateLayout, last[0])
	if err != nil {
		t.Fatal(err)
	}
	ever := func(cat, entitlement, currency, unit string) tally.CommitmentTerms {
		return tally.CommitmentTerms{Entitlement: entitlement, Category: cat, Size: tally.MustDecimal("1"), Currency: currency, Unit: unit,
			Start: time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC), End: time.Date(2099, 12, 31, 0, 0, 0, 0, time.UTC)}
	}
	draws, err := store.CommitmentDraws(ctx, s.DB(), store.CommitmentWindow{Basis: tally.BasisUsage, Granularity: tally.Day, Month: lastMonth},
		[]tally.CommitmentTerms{ever(tally.CommitmentCategorySpend, spend[0], spend[1], ""), ever(tally.CommitmentCategoryUsage, usage[0], "", usage[2])})
	if err != nil {
		t.Fatal(err)
	}
	for i, q := range []string{
		`SELECT CAST(x_AppliedCost AS VARCHAR) FROM ` + cc + ` WHERE ContractCommitmentId = ?`,
		`SELECT CAST(x_AppliedQuantity AS VARCHAR) FROM ` + cc + ` WHERE ContractCommitmentId = ?`,
	} {
		id := draws[i].Terms.Entitlement
		applied := storetest.RowsText(t, s, q, id)
		if len(applied) != 1 || draws[i].ToDate.IsZero() {
			t.Fatalf("commitment %s: applied %q, drawn %s", id, applied, draws[i].ToDate)
		}
		if want := tally.MustDecimal(applied[0]); draws[i].ToDate.Cmp(want) != 0 {
			t.Errorf("commitment %s: the workbook's drawn to date %s, FOCUS 1.3's applied %s", id, draws[i].ToDate, want)
		}
	}

	// The manifest and the metadata say where each amount comes from.
	man, err := readManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	if man.FOCUS == nil || man.FOCUS.Commitments == nil {
		t.Fatalf("manifest focus section %+v has no commitments", man.FOCUS)
	}
	notes := man.FOCUS.Commitments
	want := map[string]string{
		spend[0]:    "config: commitments[0] (Encoding pool), 2026-01-01 to 2026-12-31",
		usage[0]:    "config: commitments[1], 2026-08-01 to 2027-07-31",
		unnamed[0]:  "none: config names no commitment for entitlement " + unnamed[0],
		mistyped[0]: "none: config commitments[3] names a usage commitment; the interface types entitlement " + mistyped[0],
	}
	for id, w := range want {
		if got := notes.Sources[id]; !strings.HasPrefix(got, w) {
			t.Errorf("manifest: commitment %s: %q, want %q…", id, got, w)
		}
	}
	if n := storetest.Count(t, s, `SELECT count(*) FROM `+cc); int(n) != len(notes.Sources) {
		t.Errorf("manifest names %d commitments, the dataset has %d", len(notes.Sources), n)
	}
	wantUnmatched := []string{`commitments[2]: entitlement "ent-not-loaded" is on no charge of a known entitlement type in the loaded usage (granularity day, basis usage): no Contract Commitment takes its amount`}
	if !slices.Equal(notes.Unmatched, wantUnmatched) {
		t.Errorf("manifest: unmatched %q, want %q", notes.Unmatched, wantUnmatched)
	}
	b, err := os.ReadFile(filepath.Join(dir, FOCUSMetadataName))
	if err != nil {
		t.Fatal(err)
	}
	var md focusMetadata
	if err := json.Unmarshal(b, &md); err != nil {
		t.Fatal(err)
	}
	if md.Commitments == nil || !slices.Equal(md.Commitments.Unmatched, notes.Unmatched) || len(md.Commitments.Sources) != len(notes.Sources) {
		t.Errorf("metadata x_Commitments %+v, want the manifest's %+v", md.Commitments, notes)
	}
	// The CSV carries the same.
	csv := `read_csv(` + quoted(filepath.Join(dir, focusCommitmentsCSVDataset, "*", "*.csv")) + `, hive_partitioning = true, all_varchar = true)`
	if got := storetest.RowsText(t, s, `SELECT ContractCommitmentCost, x_CommitmentSource FROM `+csv+` WHERE ContractCommitmentId = ?`, spend[0]); len(got) != 1 ||
		!strings.HasPrefix(got[0], "120000.5") || !strings.HasSuffix(got[0], "|config: commitments[0] (Encoding pool), 2026-01-01 to 2026-12-31") {
		t.Errorf("CSV spend commitment %q", got)
	}

	// Without config nothing is invented: every amount null, every row
	// saying so.
	dir = t.TempDir()
	exportTo(t, s, Options{Dir: dir, Format: FormatFOCUS, Granularity: tally.Day, Basis: tally.BasisUsage})
	cc = parquetOf(dir, focusCommitmentsDataset)
	if n := storetest.Count(t, s, `SELECT count(*) FROM `+cc+` WHERE ContractCommitmentCost IS NOT NULL OR ContractCommitmentQuantity IS NOT NULL
    OR x_CommitmentSource <> 'none: config names no commitment for entitlement ' || split_part(ContractCommitmentId, '/', 1)`); n > 0 {
		t.Errorf("%d commitments with an amount or another source without config", n)
	}
	if man, err = readManifest(dir); err != nil || man.FOCUS.Commitments == nil || len(man.FOCUS.Commitments.Unmatched) != 0 ||
		man.FOCUS.Commitments.Sources[spend[0]] != "none: config names no commitment for entitlement "+spend[0] {
		t.Errorf("manifest without config: %+v, %v", man.FOCUS, err)
	}
}
