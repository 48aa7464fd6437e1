package export

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/tally-dev/tally"
	"github.com/tally-dev/tally/internal/testkit/focuscheck"
	"github.com/tally-dev/tally/internal/testkit/storetest"
	tallysql "github.com/tally-dev/tally/sql"
	"github.com/tally-dev/tally/store"
)

func exportTo(t *testing.T, s *store.Store, o Options) Result {
	t.Helper()
	res, err := Write(context.Background(), s, o)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func datasetOf(t *testing.T, res Result, name string) DatasetResult {
	t.Helper()
	for _, d := range res.Datasets {
		if d.Name == name {
			return d
		}
	}
	t.Fatalf("no dataset %s in %+v", name, res.Datasets)
	return DatasetResult{}
}

func TestExportParquetReadsBackExactly(t *testing.T) {
	s, _ := exportFixture(t)
	dir := filepath.Join(t.TempDir(), "lake")
	res := exportTo(t, s, Options{Dir: dir, Format: FormatParquet})

	usage := datasetOf(t, res, "usage")
	if want := []string{"2026-08", "2026-09", "2026-10"}; !slices.Equal(usage.Written, want) || len(usage.Unchanged) != 0 {
		t.Fatalf("usage written %v unchanged %v, want %v", usage.Written, usage.Unchanged, want)
	}
	if n := storetest.Count(t, s, `SELECT count(*) FROM usage`); usage.Rows != n {
		t.Errorf("usage rows written %d, table has %d", usage.Rows, n)
	}
	glob := quoted(filepath.Join(dir, "usage", "*", "*.parquet"))
	// Per month and currency, row counts and exact DECIMAL sums agree.
	want := storetest.RowsText(t, s, `SELECT strftime(date, '%Y-%m'), currency, count(*), sum(cost) FROM usage GROUP BY ALL ORDER BY ALL`)
	got := storetest.RowsText(t, s, `SELECT month, currency, count(*), sum(cost) FROM read_parquet(`+glob+`, hive_partitioning = true) GROUP BY ALL ORDER BY ALL`)
	storetest.EqualLines(t, "totals per month and currency", got, want)
	// Every row and column comes back, the cost still DECIMAL(38,12).
	if n := storetest.Count(t, s, `SELECT count(*) FROM (
    SELECT * EXCLUDE (key_id) REPLACE (CAST(run_id AS VARCHAR) AS run_id) FROM usage
    EXCEPT ALL
    SELECT * EXCLUDE (month) FROM read_parquet(`+glob+`, hive_partitioning = true)
)`); n != 0 {
		t.Errorf("%d usage rows differ after the round trip", n)
	}
	if typ := storetest.Scalar(t, s, `SELECT typeof(cost) FROM read_parquet(`+glob+`) LIMIT 1`); typ != "DECIMAL(38,12)" {
		t.Errorf("cost reads back as %v", typ)
	}
	for _, table := range []string{"payment_method_snapshots", "rate_card_price_snapshots", "project_snapshots", "location_snapshots", "organization_snapshots"} {
		d := datasetOf(t, res, table)
		if !slices.Equal(d.Written, []string{"2026-08", "2026-10"}) {
			t.Errorf("%s: months written %v, want the two snapshot months", table, d.Written)
		}
		g := quoted(filepath.Join(dir, table, "*", "*.parquet"))
		if got, want := storetest.Count(t, s, `SELECT count(*) FROM read_parquet(`+g+`)`), storetest.Count(t, s, `SELECT count(*) FROM `+table); got != want || want == 0 {
			t.Errorf("%s: %d rows read back, %d in the table", table, got, want)
		}
	}
	// The layout, the modes, the manifest, no staging left behind.
	if staging, _ := filepath.Glob(filepath.Join(dir, exportStagingPrefix+"*")); len(staging) != 0 {
		t.Errorf("a finished export left staging folders %v", staging)
	}
	var files []string
	err := filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := e.Info()
		if err != nil {
			return err
		}
		if fi.Mode().Perm()&0o007 != 0 {
			t.Errorf("%s is mode %v: readable by the world", p, fi.Mode().Perm())
		}
		if !e.IsDir() {
			rel, _ := filepath.Rel(dir, p)
			files = append(files, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if f == ManifestName || f == exportLockName {
			continue
		}
		if !regexp.MustCompile(`^[a-z_]+/month=20[0-9]{2}-[01][0-9]/data_0\.parquet$`).MatchString(f) {
			t.Errorf("unexpected file %s", f)
		}
	}
	var man manifest
	b, err := os.ReadFile(filepath.Join(dir, ManifestName))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &man); err != nil {
		t.Fatal(err)
	}
	sep := man.Datasets["usage"]["2026-09"]
	if want := storetest.Count(t, s, `SELECT count(*) FROM usage WHERE date >= '2026-09-01' AND date < '2026-10-01'`); sep.Rows != want || sep.Content == "" || sep.Latest == "" || sep.CostSum == "" {
		t.Errorf("manifest for 2026-09: %+v, want %d rows and every fingerprint", sep, want)
	}
}

// fileIDs are the identities (inode and mtime) of an export's partition
// files, by path: a file written again gets a new inode by its rename.
func fileIDs(t *testing.T, root string) map[string]os.FileInfo {
	t.Helper()
	out := map[string]os.FileInfo{}
	matches, err := filepath.Glob(filepath.Join(root, "*", "*=*", "*"))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range matches {
		fi, err := os.Stat(m)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, m)
		out[rel] = fi
	}
	return out
}

// changedFiles lists the files of after that are not the same file (or
// not there) in before, and the files of before that are gone.
func changedFiles(before, after map[string]os.FileInfo) (changed, gone []string) {
	for p, fi := range after {
		if old, ok := before[p]; !ok || !os.SameFile(old, fi) || !old.ModTime().Equal(fi.ModTime()) {
			changed = append(changed, p)
		}
	}
	for p := range before {
		if _, ok := after[p]; !ok {
			gone = append(gone, p)
		}
	}
	sort.Strings(changed)
	sort.Strings(gone)
	return changed, gone
}

func TestExportRewritesOnlyChangedMonths(t *testing.T) {
	s, srv := exportFixture(t)
	dir := t.TempDir()
	o := Options{Dir: dir, Format: FormatParquet}
	exportTo(t, s, o)
	before := fileIDs(t, dir)

	// Nothing changed: nothing is written.
	res := exportTo(t, s, o)
	if u := datasetOf(t, res, "usage"); len(u.Written) != 0 || len(u.Unchanged) != 3 {
		t.Fatalf("rerun wrote %v, left %v", u.Written, u.Unchanged)
	}
	if changed, gone := changedFiles(before, fileIDs(t, dir)); len(changed)+len(gone) != 0 {
		t.Fatalf("a rerun with no change touched %v and removed %v", changed, gone)
	}

	// September is fetched again and one cost changed: only September of
	// usage is written again.
	q := tally.UsageQuery{Window: storetest.Window(t, tally.Day, "2026-09-01", "2026-10-01")}
	rows := srv.Rows(q)
	rows[0].Cost = rows[0].Cost.Add(tally.MustDecimal("0.000000000001"))
	storetest.Load(t, s, q, rows...)
	res = exportTo(t, s, o)
	if u := datasetOf(t, res, "usage"); !slices.Equal(u.Written, []string{"2026-09"}) || !slices.Equal(u.Unchanged, []string{"2026-08", "2026-10"}) {
		t.Fatalf("after reloading September: written %v, unchanged %v", u.Written, u.Unchanged)
	}
	changed, gone := changedFiles(before, fileIDs(t, dir))
	if !slices.Equal(changed, []string{"usage/month=2026-09/data_0.parquet"}) || len(gone) != 0 {
		t.Fatalf("files changed %v, gone %v; want only September's usage", changed, gone)
	}
	glob := quoted(filepath.Join(dir, "usage", "*", "*.parquet"))
	if got, want := storetest.Scalar(t, s, `SELECT sum(cost) FROM read_parquet(`+glob+`)`), storetest.Scalar(t, s, `SELECT sum(cost) FROM usage`); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("sum after the rewrite %v, table %v", got, want)
	}

	// The same reload, identical rows but a new run: the month's content
	// changed (run_id, fetched_at), so it is written again; within
	// --from/--until only.
	before = fileIDs(t, dir)
	for _, m := range exportMonths {
		q := tally.UsageQuery{Window: storetest.Window(t, tally.Day, m[0], m[1])}
		storetest.Load(t, s, q, srv.Rows(q)...)
	}
	res = exportTo(t, s, Options{Dir: dir, Format: FormatParquet, From: storetest.Date(t, "2026-09-15"), Until: storetest.Date(t, "2026-10-01")})
	if u := datasetOf(t, res, "usage"); !slices.Equal(u.Written, []string{"2026-09"}) || len(u.Unchanged) != 0 {
		t.Fatalf("range export wrote %v, left %v; want September only", u.Written, u.Unchanged)
	}
	changed, _ = changedFiles(before, fileIDs(t, dir))
	if !slices.Equal(changed, []string{"usage/month=2026-09/data_0.parquet"}) {
		t.Fatalf("range export changed %v", changed)
	}

	// October's rows are all gone (fetched again, empty): its folder goes.
	q = tally.UsageQuery{Window: storetest.Window(t, tally.Day, "2026-10-01", "2026-10-21")}
	storetest.Load(t, s, q)
	res = exportTo(t, s, o)
	if u := datasetOf(t, res, "usage"); !slices.Equal(u.Removed, []string{"2026-10"}) || !slices.Equal(u.Written, []string{"2026-08"}) {
		t.Fatalf("written %v removed %v, want August (reloaded) written and October removed", u.Written, u.Removed)
	}
	if _, err := os.Stat(filepath.Join(dir, "usage", "month=2026-10")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("October's folder is still there: %v", err)
	}
	if got, want := storetest.Count(t, s, `SELECT count(*) FROM read_parquet(`+glob+`)`), storetest.Count(t, s, `SELECT count(*) FROM usage`); got != want {
		t.Errorf("%d rows in the export, %d in the table", got, want)
	}

	// A deleted partition file is written again although its data did not
	// change.
	if err := os.Remove(filepath.Join(dir, "usage", "month=2026-08", "data_0.parquet")); err != nil {
		t.Fatal(err)
	}
	if u := datasetOf(t, exportTo(t, s, o), "usage"); !slices.Equal(u.Written, []string{"2026-08"}) {
		t.Errorf("a missing file was not written again: %v", u.Written)
	}
}

func TestExportFOCUSFollowsTheRules(t *testing.T) {
	s, _ := exportFixture(t)
	dir := t.TempDir()
	res := exportTo(t, s, Options{Dir: dir, Format: FormatFOCUS, CSV: true, Granularity: tally.Day, Basis: tally.BasisUsage, FOCUSVersion: FOCUS12})
	f := datasetOf(t, res, "focus")
	if f.Partition != "billing_period" || len(f.Written) < 3 {
		t.Fatalf("focus: %+v", f)
	}
	from := `read_parquet(` + quoted(filepath.Join(dir, "focus", "*", "*.parquet")) + `, hive_partitioning = true)`

	// Every FOCUS 1.2 rule that applies (internal/focuscheck).
	v, err := focuscheck.Violations(context.Background(), s.DB(), from)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range v {
		t.Errorf("FOCUS 1.2: %s", line)
	}
	// Tally's own mapping.
	rules := map[string]string{
		"billing period is one calendar month":          `BillingPeriodEnd <> BillingPeriodStart + INTERVAL 1 MONTH OR date_part('day', timezone('UTC', BillingPeriodStart)) <> 1`,
		"partition is the billing period":               `billing_period <> strftime(timezone('UTC', BillingPeriodStart), '%Y-%m')`,
		"ChargeCategory is Usage":                       `ChargeCategory <> 'Usage'`,
		"license: nothing billed, nothing amortized":    `x_PaidAs = 'license' AND (BilledCost <> 0 OR EffectiveCost <> 0)`,
		"balance: prepaid, its share is effective":      `x_PaidAs = 'balance' AND (BilledCost <> 0 OR EffectiveCost <> x_Cost)`,
		"direct: billed as sent by the provider":        `x_PaidAs IN ('direct', 'other') AND InvoiceIssuerName = ProviderName AND (BilledCost <> x_Cost OR EffectiveCost <> x_Cost)`,
		"marketplace: billed 0, value effective":        `x_PaidAs IN ('direct', 'other') AND InvoiceIssuerName <> ProviderName AND (BilledCost <> 0 OR EffectiveCost <> x_Cost)`,
		"unknown entitlement types claim no commitment": `x_PaidAs = 'other' AND CommitmentDiscountId IS NOT NULL`,
		"the config's granularity and basis only":       `x_Granularity <> 'day' OR x_Basis <> 'usage'`,
		"consumed and pricing quantity are the usage":   `ConsumedQuantity <> PricingQuantity`,
	}
	for name, bad := range rules {
		if n := storetest.Count(t, s, `SELECT count(*) FROM `+from+` WHERE `+bad); n > 0 {
			t.Errorf("%s: broken in %d rows (%s)", name, n, bad)
		}
	}

	// Every usage row once, and money exact per currency.
	want := storetest.RowsText(t, s, `SELECT currency, count(*), sum(cost) FROM usage WHERE granularity = 'day' AND basis = 'usage' GROUP BY ALL ORDER BY ALL`)
	got := storetest.RowsText(t, s, `SELECT BillingCurrency, count(*), sum(x_Cost) FROM `+from+` GROUP BY ALL ORDER BY ALL`)
	storetest.EqualLines(t, "rows and cost per currency", got, want)
	// The platform bills what it invoices itself; a marketplace's share
	// is in its own invoice, and the fixture has some.
	want = storetest.RowsText(t, s, `SELECT BillingCurrency, sum(x_Cost) FILTER (WHERE x_PaidAs IN ('direct', 'other') AND InvoiceIssuerName = ProviderName) FROM `+from+` GROUP BY ALL ORDER BY ALL`)
	got = storetest.RowsText(t, s, `SELECT BillingCurrency, sum(BilledCost) FROM `+from+` GROUP BY ALL ORDER BY ALL`)
	storetest.EqualLines(t, "billed cost per currency", got, want)
	if n := storetest.Count(t, s, `SELECT count(*) FROM `+from+` WHERE InvoiceIssuerName <> ProviderName AND x_PaidAs = 'direct'`); n == 0 {
		t.Error("the fixture has no marketplace rows billed directly: the marketplace rule is untested")
	}

	// The fixture exercises every branch of the mapping.
	for _, v := range []struct{ col, want string }{
		{"x_PaidAs", "balance|direct|license|other"},
		{"x_PriceMatchedBy", "cost / quantity|interface price|meter name in parentheses|name|sku"},
		{"CommitmentDiscountCategory", "Spend|Usage|NULL"},
		{"ServiceCategory", "Media|Storage"},
		{"BillingAccountType", "direct|marketplaceA|marketplaceB"},
		{"InvoiceIssuerName", "Media cloud|marketplaceA|marketplaceB"},
		{"PricingUnit", "GB|GB-Hours|Minutes|Units"},
	} {
		if got := strings.Join(distinct(t, s, v.col, from), "|"); got != v.want {
			t.Errorf("%s values %q, want %q", v.col, got, v.want)
		}
	}
	// The rate card in force: September's rows use the first snapshot,
	// October's the second (every price raised by priceBump).
	prices := storetest.RowsText(t, s, `SELECT DISTINCT strftime(timezone('UTC', ChargePeriodStart), '%Y-%m'), ListUnitPrice, x_RateCardSnapshotAt
FROM `+from+` WHERE SkuMeter = 'video_encoding_uhd' AND BillingCurrency = 'USD' ORDER BY 1`)
	card := storetest.RowsText(t, s, `SELECT DISTINCT price FROM rate_card_price_snapshots WHERE name = 'premium_uhd(video_encoding_uhd)' AND currency = 'USD' AND snapshot_at = ?`, firstSnapshot)
	if len(card) != 1 {
		t.Fatalf("rate card prices %v", card)
	}
	first := tally.MustDecimal(card[0])
	second := first.Add(priceBump)
	wantPrices := []string{
		"2026-08|" + first.String() + "|" + firstSnapshot.Format(time.RFC3339),
		"2026-09|" + first.String() + "|" + firstSnapshot.Format(time.RFC3339),
		"2026-10|" + second.String() + "|" + secondSnapshot.Format(time.RFC3339),
	}
	storetest.EqualLines(t, "list price in force per month", prices, wantPrices)
	// A meter no card prices (the DRM meter: no sku, no unit) keeps its
	// cost as list cost, its name as SKU, and counts in Units.
	if got := storetest.RowsText(t, s, `SELECT DISTINCT SkuId, SkuPriceId, PricingUnit, ConsumedUnit FROM `+from+` WHERE SkuMeter = 'drm_license_requests'`); !slices.Equal(got, []string{"drm_license_requests|drm_license_requests|Units|Units"}) {
		t.Errorf("unpriced meter: %v", got)
	}

	// The CSV holds the same rows, times in FOCUS's format.
	csvFrom := `read_csv(` + quoted(filepath.Join(dir, "focus_csv", "*", "*.csv")) + `, hive_partitioning = true, all_varchar = true)`
	if got, want := storetest.Count(t, s, `SELECT count(*) FROM `+csvFrom), storetest.Count(t, s, `SELECT count(*) FROM `+from); got != want {
		t.Errorf("CSV has %d rows, Parquet %d", got, want)
	}
	if n := storetest.Count(t, s, `SELECT count(*) FROM `+csvFrom+` WHERE NOT regexp_full_match(ChargePeriodStart, '\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z')`); n > 0 {
		t.Errorf("%d CSV rows have a ChargePeriodStart not in YYYY-MM-DDTHH:mm:ssZ", n)
	}
	if got := storetest.RowsText(t, s, `SELECT sum(CAST(BilledCost AS DECIMAL(38, 12))) FROM `+csvFrom); !slices.Equal(got, storetest.RowsText(t, s, `SELECT sum(BilledCost) FROM `+from)) {
		t.Errorf("CSV billed cost %v differs from the Parquet's", got)
	}
	// The view in the database maps the same rows.
	if got, want := storetest.Count(t, s, `SELECT count(*) FROM focus WHERE x_Granularity = 'day' AND x_Basis = 'usage'`), storetest.Count(t, s, `SELECT count(*) FROM `+from); got != want {
		t.Errorf("the focus view has %d rows, the export %d", got, want)
	}
}

func TestExportFromReadOnlyCopy(t *testing.T) {
	s, _ := exportFixture(t)
	ctx := context.Background()
	ro := openPublished(t, s)
	dir := t.TempDir()
	res, err := Write(ctx, ro, Options{Dir: dir, Format: FormatFOCUS, Granularity: tally.Day, Basis: tally.BasisUsage})
	if err != nil {
		t.Fatal(err)
	}
	if f := datasetOf(t, res, "focus"); f.Rows != storetest.Count(t, s, `SELECT count(*) FROM usage`) {
		t.Errorf("exported %d FOCUS rows from the copy", f.Rows)
	}
}

func TestExportRefusesBadOptions(t *testing.T) {
	s := storetest.Open(t)
	ctx := context.Background()
	dir := t.TempDir()
	tests := []struct {
		name string
		o    Options
		want string
	}{
		{"no folder", Options{Format: FormatParquet}, "the export folder is empty"},
		{"format", Options{Dir: dir, Format: "orc"}, `format "orc" is not one of parquet, focus`},
		{"csv with parquet", Options{Dir: dir, Format: FormatParquet, CSV: true}, "CSV is written for format focus only"},
		{"focus without granularity", Options{Dir: dir, Format: FormatFOCUS, Basis: tally.BasisUsage}, `granularity "" is not one of`},
		{"focus without basis", Options{Dir: dir, Format: FormatFOCUS, Granularity: tally.Day}, `basis "" is not one of usage, reported`},
		{"until before from", Options{Dir: dir, Format: FormatParquet, From: storetest.Date(t, "2026-10-01"), Until: storetest.Date(t, "2026-10-01")}, "until 2026-10-01 must be after from 2026-10-01"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Write(ctx, s, tc.o)
			mustContain(t, err, tc.want)
		})
	}
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) != 0 {
		t.Errorf("refused exports left %v in the folder (%v)", entries, err)
	}

	// A second export into a folder another one holds fails at once.
	unlock, err := lockExportDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Write(ctx, s, Options{Dir: dir, Format: FormatParquet})
	mustContain(t, err, "another tally export", "is writing this folder")
	unlock()
	if _, err := Write(ctx, s, Options{Dir: dir, Format: FormatParquet}); err != nil {
		t.Errorf("after the lock is freed: %v", err)
	}
}

func TestExportEmptyStoreAndCancel(t *testing.T) {
	s := storetest.Open(t)
	dir := t.TempDir()
	res := exportTo(t, s, Options{Dir: dir, Format: FormatParquet})
	for _, d := range res.Datasets {
		if len(d.Written)+len(d.Unchanged)+len(d.Removed) != 0 {
			t.Errorf("%s: an empty store exported %+v", d.Name, d)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, ManifestName)); err != nil {
		t.Errorf("no manifest: %v", err)
	}

	s, _ = exportFixture(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	dir = t.TempDir()
	if _, err := Write(ctx, s, Options{Dir: dir, Format: FormatParquet}); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled export: %v", err)
	}
	matches, _ := filepath.Glob(filepath.Join(dir, "*", "*=*", "*"))
	staging, _ := filepath.Glob(filepath.Join(dir, exportStagingPrefix+"*"))
	if len(matches)+len(staging) != 0 {
		t.Errorf("a cancelled export left %v %v", matches, staging)
	}
}

// FOCUSQuery carries the views it reads: on a copy published by an older
// Tally, which had none of the views focus reads nor focus itself, it
// gives exactly the rows the current view gives; where the copy has the
// tables the load keeps, it reads the meters of every month from them,
// not from every usage row (two passes over the history in each of an
// export's queries), and where it has not (a copy from before them),
// from the usage rows, as the views' files define them.
func TestFOCUSQueryRunsOnAnOlderCopy(t *testing.T) {
	for _, c := range []struct {
		name string
		drop []string // tables dropped besides the views
		kept bool
	}{
		{"with the kept tables", nil, true},
		{"from before the kept tables", []string{"daily_usage_totals", "daily_usage_cost", "daily_baselines"}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, _ := exportFixture(t)
			ctx := context.Background()
			fingerprint := `SELECT count(*), sum(hash(f)), count(x_RateCardSnapshotAt) FROM (%s) f`
			// The rows as the views' files define them, every view read
			// from the usage rows, and as the database's view gives them.
			focus, err := tallysql.View("focus")
			if err != nil {
				t.Fatal(err)
			}
			files, err := tallysql.Inline(focus.Query)
			if err != nil {
				t.Fatal(err)
			}
			want := storetest.RowsText(t, s, fmt.Sprintf(fingerprint, files))
			storetest.EqualLines(t, "the focus view", storetest.RowsText(t, s, fmt.Sprintf(fingerprint, "SELECT * FROM focus")), want)
			for _, v := range []string{"focus", "rate_card_matches", "payment_methods_by_month", "snapshots_in_force", "usage_rows", "meter_months", "meter_skus"} {
				if _, err := s.DB().ExecContext(ctx, "DROP VIEW "+v); err != nil {
					t.Fatal(err)
				}
			}
			for _, tb := range c.drop {
				if _, err := s.DB().ExecContext(ctx, "DROP TABLE "+tb); err != nil {
					t.Fatal(err)
				}
			}
			ro := openPublished(t, s)
			body, err := FOCUSQuery(ctx, ro.DB())
			if err != nil {
				t.Fatal(err)
			}
			if reads := strings.Contains(body, "FROM daily_usage_totals"); reads != c.kept || strings.Contains(body, "usage_meter_days") == c.kept {
				t.Errorf("the query reads daily_usage_totals: %v, usage_meter_days: %v; want daily_usage_totals %v",
					reads, strings.Contains(body, "usage_meter_days"), c.kept)
			}
			got := storetest.RowsText(t, ro, fmt.Sprintf(fingerprint, body))
			storetest.EqualLines(t, "FOCUS rows on an older copy", got, want)
			if f := strings.Split(want[0], "|"); f[2] == "0" || f[2] == f[0] {
				t.Fatalf("rows, hash, rows priced from a rate card = %v: the fixture should price some rows from a card and not others", f)
			}
		})
	}
}

// openPublished publishes s and opens the copy read-only, as analysts,
// tally report and tally export do.
func openPublished(t *testing.T, s *store.Store) *store.Store {
	t.Helper()
	ctx := context.Background()
	pub, err := s.Publish(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ro, err := store.Open(ctx, pub, store.ReadOnly())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ro.Close() })
	return ro
}

// The FOCUS checker is not a test that cannot fail: each row broken in one
// of the ways FOCUS 1.2 forbids is reported, naming the rule.
func TestFOCUSCheckerFindsBrokenRows(t *testing.T) {
	s, _ := exportFixture(t)
	dir := t.TempDir()
	exportTo(t, s, Options{Dir: dir, Format: FormatFOCUS, Granularity: tally.Day, Basis: tally.BasisUsage, FOCUSVersion: FOCUS12})
	from := `read_parquet(` + quoted(filepath.Join(dir, "focus", "*", "*.parquet")) + `, hive_partitioning = true)`
	ctx := context.Background()
	for _, c := range []struct{ name, change, want string }{
		{"null list price", `ListUnitPrice = NULL`, "ListUnitPrice is not null on a charge"},
		{"negative price", `ContractedUnitPrice = -1`, "ContractedUnitPrice is not negative"},
		{"list cost off", `ListCost = ListCost + 1`, "ListCost is ListUnitPrice × PricingQuantity"},
		{"marketplace billed", `BilledCost = 1, InvoiceIssuerName = 'Some marketplace'`, "BilledCost is 0 where a third party invoices"},
		{"category missing", `CommitmentDiscountId = 'e1', CommitmentDiscountCategory = NULL`, "CommitmentDiscountCategory is null exactly when CommitmentDiscountId is"},
		{"bad status", `CommitmentDiscountStatus = 'Active'`, "CommitmentDiscountStatus is Used or Unused"},
		{"details not an object", `SkuPriceDetails = '[1, 2]'`, "SkuPriceDetails is a JSON object"},
		{"details key not custom", `SkuPriceDetails = '{"Family": "x"}'`, "SkuPriceDetails keys are custom (x_)"},
		{"region name without id", `RegionId = NULL, RegionName = 'Europe'`, "RegionName is null exactly when RegionId is"},
		{"currency", `BillingCurrency = 'EURO'`, "BillingCurrency is an ISO 4217 code"},
	} {
		t.Run(c.name, func(t *testing.T) {
			table := "broken_" + strings.ReplaceAll(c.name, " ", "_")
			if _, err := s.DB().ExecContext(ctx, `CREATE TEMP TABLE `+table+` AS SELECT * FROM `+from); err != nil {
				t.Fatal(err)
			}
			if _, err := s.DB().ExecContext(ctx, `UPDATE `+table+` SET `+c.change+` WHERE rowid = (SELECT min(rowid) FROM `+table+`)`); err != nil {
				t.Fatal(err)
			}
			v, err := focuscheck.Violations(ctx, s.DB(), table)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.ContainsFunc(v, func(l string) bool { return strings.HasPrefix(l, c.want+": broken in 1 rows") }) {
				t.Errorf("one row with %s: violations %q, want %q", c.change, v, c.want)
			}
		})
	}
	// Between rows: a SkuPriceId under two SkuIds (a closed month's rows
	// once gave the meter where the others gave the sku).
	table := brokenCopy(t, s, from, "sku price under two skus", `SkuId = SkuId || '-other'`, `SkuPriceId IS NOT NULL`)
	v, err := focuscheck.Violations(ctx, s.DB(), table)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(v, func(l string) bool { return l == "a SkuPriceId names one SkuId: broken for 1 SkuPriceIds" }) {
		t.Errorf("a SkuPriceId under two SkuIds: violations %q", v)
	}
}

// TestRangedExportAsWhole: a ranged export reads only the usage rows that
// can fall in its months (see narrowed and monthsOf), and writes for those
// months exactly what a whole export writes: with rows billed a month after
// their date, rows not billed yet (billed in their date's month) in and
// out of the range, and a closed month, for parquet, FOCUS 1.2 and FOCUS
// 1.3 with CSV. The Contract Commitment dataset is written whole either
// way.
func TestRangedExportAsWhole(t *testing.T) {
	ctx := context.Background()
	s, _ := exportFixture(t)
	for _, q := range []string{
		// August rows billed in September, and rows of every month not billed yet.
		`INSERT INTO usage SELECT * REPLACE (date_processed + INTERVAL 35 DAY AS date_processed, 'late ' || meter_name AS meter_name)
FROM usage WHERE date < DATE '2026-08-10' AND date_processed IS NOT NULL`,
		`INSERT INTO usage SELECT * REPLACE (NULL AS date_processed, 'unbilled ' || meter_name AS meter_name)
FROM usage WHERE day(date) IN (3, 17) AND date_processed IS NOT NULL`,
		`INSERT INTO month_closes (id, month, basis, granularity, action, acted_at, who)
VALUES (uuid(), DATE '2026-10-01', 'usage', 'day', 'close', TIMESTAMP '2026-10-22', 'test')`,
	} {
		if _, err := s.DB().ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	from, until := storetest.Date(t, "2026-09-10"), storetest.Date(t, "2026-10-05") // September and October, whole
	inRangeMonths := map[string]bool{"2026-09": true, "2026-10": true}
	lines := func(dir, name, part string, csv bool) []string {
		t.Helper()
		glob := quoted(filepath.Join(dir, name, part, "*"))
		read := `read_parquet(` + glob + `, hive_partitioning = true)`
		if csv {
			read = `read_csv(` + glob + `, all_varchar = true, hive_partitioning = true)`
		}
		return storetest.RowsText(t, s, `SELECT CAST(t AS VARCHAR) FROM `+read+` t ORDER BY 1`)
	}
	for _, c := range []struct {
		name     string
		o        Options
		datasets []string
	}{
		{"parquet", Options{Format: FormatParquet}, []string{"usage"}},
		{"focus 1.2", Options{Format: FormatFOCUS, FOCUSVersion: FOCUS12, Granularity: tally.Day, Basis: tally.BasisUsage}, []string{"focus"}},
		{"focus 1.3", Options{Format: FormatFOCUS, FOCUSVersion: FOCUS13, Granularity: tally.Day, Basis: tally.BasisUsage, CSV: true},
			[]string{"focus", "focus_csv", focusCommitmentsDataset, focusCommitmentsCSVDataset}},
	} {
		t.Run(c.name, func(t *testing.T) {
			whole, ranged := c.o, c.o
			whole.Dir, ranged.Dir = t.TempDir(), t.TempDir()
			ranged.From, ranged.Until = from, until
			exportTo(t, s, whole)
			exportTo(t, s, ranged)
			for _, name := range c.datasets {
				parts, err := filepath.Glob(filepath.Join(whole.Dir, name, "*=*"))
				if err != nil || len(parts) < 3 {
					t.Fatalf("%s: the whole export has partitions %v (%v): want months before, in and after the range", name, parts, err)
				}
				csv := strings.HasSuffix(name, "_csv")
				for _, p := range parts {
					part := filepath.Base(p)
					month := part[strings.Index(part, "=")+1:]
					_, err := os.Stat(filepath.Join(ranged.Dir, name, part))
					switch {
					case strings.HasPrefix(name, focusCommitmentsDataset) || inRangeMonths[month]:
						if err != nil {
							t.Errorf("%s %s: not in the ranged export: %v", name, part, err)
							continue
						}
						w, r := lines(whole.Dir, name, part, csv), lines(ranged.Dir, name, part, csv)
						if len(w) == 0 || strings.Join(w, "\n") != strings.Join(r, "\n") {
							t.Errorf("%s %s: the ranged export has %d rows, the whole one %d, or they differ", name, part, len(r), len(w))
						}
					case err == nil:
						t.Errorf("%s %s: written by the export of %s to %s", name, part, from.Format(time.DateOnly), until.Format(time.DateOnly))
					}
				}
			}
			if c.o.Format != FormatFOCUS {
				return
			}
			// The range's rows include rows billed late and rows not billed yet.
			focusRows := `read_parquet(` + quoted(filepath.Join(whole.Dir, "focus", "billing_period=2026-09", "*")) + `)`
			if n := storetest.Count(t, s, `SELECT count(*) FROM `+focusRows+` WHERE SkuMeter LIKE 'late %' AND ChargePeriodStart < TIMESTAMPTZ '2026-09-01 00:00:00+00'`); n == 0 {
				t.Error("no row of September is billed late: the fixture tests nothing")
			}
			if n := storetest.Count(t, s, `SELECT count(*) FROM `+focusRows+` WHERE x_DateProcessed IS NULL AND SkuMeter LIKE 'unbilled %'`); n == 0 {
				t.Error("no row of September is unbilled: the fixture tests nothing")
			}
		})
	}
}
