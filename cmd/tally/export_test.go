package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math/big"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/tally-dev/tally"
	"github.com/tally-dev/tally/fetch/sim"
	"github.com/tally-dev/tally/internal/testkit/focuscheck"
	"github.com/tally-dev/tally/internal/testkit/laketest"
	"github.com/tally-dev/tally/internal/testkit/pgtest"
	"github.com/tally-dev/tally/internal/testkit/s3test"
	"github.com/tally-dev/tally/job"
	"github.com/tally-dev/tally/lake"
	"github.com/tally-dev/tally/lake/ice"
	"github.com/tally-dev/tally/store"
)

// exportSetup fetches the simulated organization's usage of the last two
// months and this month to date into a config's database, through tally
// fetch, and returns the config and the published copy. Two whole months,
// whatever today is, so the legacy payment method (which expires 40 days
// after the sim's start) has been used past its end, and the latest
// complete month has one before it. The fetch runs once per test binary
// (exportFixture); each test gets a copy of its folder, and the token in
// the environment as cliConfig exports it (the interface itself is gone).
func exportSetup(t *testing.T) (cfg, pub string) {
	t.Helper()
	setCLIEnv(t, cliSimToken)
	dir := placeFixture(t, exportFixture)
	return filepath.Join(dir, "tally.yaml"), store.PublishedPath(filepath.Join(dir, "tally.duckdb"))
}

// exportFixture is the folder of cliConfig's config against newCLISim's
// interface (its clock at the last whole hour) after tally fetch; the
// caller has exported the token.
var exportFixture = onceFixture(func(dir string) error {
	start := tally.Month.Truncate(time.Now().UTC()).AddDate(0, -2, 0)
	now := time.Now().UTC().Truncate(time.Hour)
	srv := httptest.NewServer(sim.New(sim.Options{Token: cliSimToken, Seed: 9, Start: start, Now: func() time.Time { return now }}))
	defer srv.Close()
	cfg := filepath.Join(dir, "tally.yaml")
	if err := os.WriteFile(cfg, []byte(cliConfigText(srv.URL, start, "")), 0o600); err != nil {
		return err
	}
	var out string
	var err error
	stderr, cerr := captureStderr(func() { out, err = runCLI("", "fetch", "--config", cfg) })
	if cerr != nil {
		return cerr
	}
	if code := exitCode(err); code != 0 {
		return fmt.Errorf("tally fetch: exit %d\n%s\n%s", code, out, stderr)
	}
	return nil
})

// openCopy opens the published copy read-only for the test's checks.
func openCopy(t *testing.T, pub string) *store.Store {
	t.Helper()
	st, err := store.Open(context.Background(), pub, store.ReadOnly())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// lines runs query and renders its rows as text lines.
func lines(t *testing.T, st *store.Store, query string) []string {
	t.Helper()
	res, err := st.Query(context.Background(), query)
	if err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	var b strings.Builder
	if err := writeResult(&b, formatCSV, res); err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSpace(b.String()), "\r\n")
}

func sqlString(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

func TestExportCommand(t *testing.T) {
	cfg, pub := exportSetup(t)
	dir := filepath.Dir(cfg)
	// No token is needed to export.
	t.Setenv(cliTokenEnv, "")

	out, code, stderr := cli(t, "export", "--config", cfg)
	if code != 0 {
		t.Fatalf("tally export: exit %d\n%s\n%s", code, out, stderr)
	}
	st := openCopy(t, pub)
	months := lines(t, st, `SELECT DISTINCT strftime(date, '%Y-%m') FROM usage ORDER BY 1`)[1:]
	if len(months) == 0 {
		t.Fatal("the fetch loaded nothing")
	}
	wantLine := regexp.MustCompile(`(?m)^  usage\s+` + regexp.QuoteMeta(strconv.Itoa(len(months))+" month(s) written, 0 unchanged, 0 removed"))
	if !wantLine.MatchString(out) || !strings.Contains(out, "export "+filepath.Join(dir, "exports")+" (format parquet) from "+pub) {
		t.Errorf("summary:\n%s", out)
	}
	glob := sqlString(filepath.Join(dir, "exports", "usage", "*", "*.parquet"))
	got := lines(t, st, `SELECT month, currency, count(*), sum(cost) FROM read_parquet(`+glob+`, hive_partitioning = true) GROUP BY ALL ORDER BY ALL`)
	want := lines(t, st, `SELECT strftime(date, '%Y-%m') AS month, currency, count(*), sum(cost) FROM usage GROUP BY ALL ORDER BY ALL`)
	if !slices.Equal(got[1:], want[1:]) {
		t.Errorf("read back:\n%v\nwant:\n%v", got, want)
	}

	// A rerun writes nothing.
	out, code, _ = cli(t, "export", "--config", cfg)
	if code != 0 || !regexp.MustCompile(`(?m)^  usage\s+0 month\(s\) written, `+strconv.Itoa(len(months))+` unchanged`).MatchString(out) {
		t.Errorf("rerun: exit %d\n%s", code, out)
	}

	// FOCUS, with CSV, into another folder, limited to the last month.
	lake := filepath.Join(t.TempDir(), "lake")
	last := months[len(months)-1]
	out, code, stderr = cli(t, "export", "--config", cfg, "--to", lake, "--format", "focus", "--csv", "--from", last+"-01")
	if code != 0 {
		t.Fatalf("focus export: exit %d\n%s\n%s", code, out, stderr)
	}
	for _, f := range []string{"focus/billing_period=" + last + "/data_0.parquet", "focus_csv/billing_period=" + last + "/data_0.csv", "_tally_manifest.json", "_focus_metadata.json"} {
		if _, err := os.Stat(filepath.Join(lake, f)); err != nil {
			t.Errorf("focus export: %v", err)
		}
	}
	if m, _ := filepath.Glob(filepath.Join(lake, "focus", "*")); len(m) != 1 {
		t.Errorf("--from %s-01 wrote %v", last, m)
	}
	if m, _ := filepath.Glob(filepath.Join(lake, "focus_contract_commitment", "*", "*.parquet")); len(m) == 0 || !strings.Contains(out, "focus_contract_commitment") {
		t.Errorf("no Contract Commitment dataset: %v\n%s", m, out)
	}
	if v, err := focuscheck.ExportViolations(context.Background(), st.DB(), lake); err != nil || len(v) > 0 {
		t.Errorf("FOCUS 1.3 export: %q, %v", v, err)
	}
	// The metadata describes the billing period the folder holds, no other.
	b, err := os.ReadFile(filepath.Join(lake, "_focus_metadata.json"))
	if err != nil {
		t.Fatal(err)
	}
	var md struct {
		Periods []struct{ BillingPeriodStart string } `json:"x_BillingPeriods"`
	}
	if err := json.Unmarshal(b, &md); err != nil || len(md.Periods) != 1 || md.Periods[0].BillingPeriodStart != last+"-01T00:00:00Z" {
		t.Errorf("metadata billing periods %+v (%v), want %s only", md.Periods, err, last)
	}
	// --focus-version 1.2: the 1.2 rows (the payment method as billing
	// account, no 1.3 column), nothing only 1.3 writes.
	out, code, stderr = cli(t, "export", "--config", cfg, "--to", lake, "--format", "focus", "--focus-version", "1.2", "--from", last+"-01")
	if code != 0 || !regexp.MustCompile(`(?m)^  focus\s+1 month\(s\) written`).MatchString(out) {
		t.Fatalf("focus 1.2 export: exit %d\n%s\n%s", code, out, stderr)
	}
	if _, err := os.Stat(filepath.Join(lake, "_focus_metadata.json")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("1.2 export left the 1.3 metadata: %v", err)
	}
	focusGlob := sqlString(filepath.Join(lake, "focus", "*", "*.parquet"))
	if got := lines(t, st, `SELECT count(*) FROM (DESCRIBE SELECT * FROM read_parquet(`+focusGlob+`)) WHERE column_name IN ('ServiceProviderName', 'ContractApplied')`); got[1] != "0" {
		t.Errorf("1.2 columns: %v", got)
	}

	// INTERFACE.md's form: --to DIR for the folder, --to DATE for the end.
	first := months[0]
	lake2 := filepath.Join(t.TempDir(), "lake2")
	end, _ := time.Parse("2006-01", first)
	out, code, stderr = cli(t, "export", "--config", cfg, "--to", lake2, "--from", first+"-01", "--to", end.AddDate(0, 1, 0).Format("2006-01-02"))
	if code != 0 {
		t.Fatalf("export --to DIR --to DATE: exit %d\n%s\n%s", code, out, stderr)
	}
	if m, _ := filepath.Glob(filepath.Join(lake2, "usage", "*")); len(m) != 1 || filepath.Base(m[0]) != "month="+first {
		t.Errorf("--to %s --from %s-01 --to <next month> wrote %v", lake2, first, m)
	}
}

func TestExportUsageErrors(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "tally.yaml")
	if err := os.WriteFile(cfg, []byte("usage:\n  start: 2026-01-01\nstore:\n  path: tally.duckdb\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"to a date and until", []string{"--config", cfg, "--to", "lake", "--to", "2026-11-01", "--until", "2026-12-01"}, `--to "2026-11-01" and --until "2026-12-01" both give the end date: give one`},
		{"a lone to that is a date", []string{"--config", cfg, "--to", "2026-10-01"}, `--to "2026-10-01" looks like a date, but --to of tally export is the output folder: give the end date with --until 2026-10-01`},
		{"a date to with until", []string{"--config", cfg, "--to", "2026-11-01", "--until", "2026-12-01"}, `--to "2026-11-01" looks like a date`},
		{"two folders", []string{"--config", cfg, "--to", "a", "--to", "b"}, `--to "a" and --to "b" both name the output folder: give one`},
		{"to date not after from", []string{"--config", cfg, "--to", "lake", "--from", "2026-10-01", "--to", "2026-10-01"}, "--until 2026-10-01 must be after --from 2026-10-01"},
		{"format", []string{"--config", cfg, "--format", "orc"}, `--format "orc" is not one of parquet, focus`},
		{"from", []string{"--config", cfg, "--from", "2026-02-30"}, "--from:"},
		{"until", []string{"--config", cfg, "--until", "2026-13"}, "--until:"},
		{"until not after from", []string{"--config", cfg, "--from", "2026-10-01", "--until", "2026-10-01"}, "--until 2026-10-01 must be after --from 2026-10-01 (--until is exclusive)"},
		{"csv with parquet", []string{"--config", cfg, "--csv"}, "--csv writes FOCUS rows as CSV: use it with --format focus"},
		{"csv-raw with parquet", []string{"--config", cfg, "--csv-raw"}, "--csv-raw applies to the FOCUS CSV: use it with --format focus"},
		{"focus version", []string{"--config", cfg, "--format", "focus", "--focus-version", "1.1"}, `--focus-version "1.1" is not one of 1.3, 1.2`},
		{"focus version with parquet", []string{"--config", cfg, "--focus-version", "1.2"}, "--focus-version 1.2 applies to FOCUS rows: use it with --format focus"},
		{"iceberg with from", []string{"--config", cfg, "--format", "iceberg", "--from", "2026-10-01"}, "--from and --until do not apply to --format iceberg"},
		{"iceberg with csv", []string{"--config", cfg, "--format", "iceberg", "--csv"}, "--csv writes FOCUS rows as CSV: use it with --format focus"},
		{"no config", nil, "--config is required"},
		{"argument", []string{"--config", cfg, "extra"}, "unknown command"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, code, stderr := cli(t, append([]string{"export"}, tc.args...)...)
			if code != job.ExitRefused || !strings.Contains(stderr, tc.want) {
				t.Errorf("exit %d, stderr %q; want exit %d with %q", code, stderr, job.ExitRefused, tc.want)
			}
		})
	}
	// No published copy yet: refused (exit 2, nothing loaded yet) saying
	// what makes one, and no export folder created.
	_, code, stderr := cli(t, "export", "--config", cfg)
	if code != job.ExitRefused || !strings.Contains(stderr, "no published copy of the database") || !strings.Contains(stderr, "tally fetch --config") {
		t.Errorf("without a copy: exit %d, %q", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "exports")); !os.IsNotExist(err) {
		t.Errorf("the export folder was created: %v", err)
	}
}

// readmeSections returns the text of the sections (## headings) named, in
// README.md and the docs beside it.
func readmeSections(t *testing.T, names ...string) string {
	t.Helper()
	docs, _ := filepath.Glob(filepath.Join("..", "..", "docs", "*.md"))
	var b []byte
	for _, p := range append([]string{filepath.Join("..", "..", "README.md")}, docs...) {
		text, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		b = append(append(b, '\n'), text...)
	}
	var out strings.Builder
	for _, part := range strings.Split("\n"+string(b), "\n## ")[1:] {
		title, _, _ := strings.Cut(part, "\n")
		if slices.Contains(names, strings.TrimSpace(title)) {
			out.WriteString(part)
		}
	}
	if out.Len() == 0 {
		t.Fatalf("README has no section %v", names)
	}
	return out.String()
}

var sqlBlockRE = regexp.MustCompile("(?s)```sql\n(.*?)```")

// Every SQL example of the README's Export and For analysts sections runs,
// as written, against a database fetched from the simulated interface and
// its export, and returns rows; the named queries it mentions exist.
func TestREADMEAnalystExamples(t *testing.T) {
	cfg, pub := exportSetup(t)
	dir := filepath.Dir(cfg)
	for _, format := range []string{"parquet", "focus"} {
		if out, code, stderr := cli(t, "export", "--config", cfg, "--format", format); code != 0 {
			t.Fatalf("export %s: exit %d\n%s\n%s", format, code, out, stderr)
		}
	}
	text := readmeSections(t, "Export", "For analysts")
	// The examples name exports/… relative to where they run: beside the
	// config, as export.dir defaults.
	t.Chdir(dir)
	st := openCopy(t, pub)
	blocks := sqlBlockRE.FindAllStringSubmatch(text, -1)
	if len(blocks) < 8 {
		t.Fatalf("found %d SQL examples in the README", len(blocks))
	}
	for _, b := range blocks {
		res, err := st.Query(context.Background(), b[1])
		if err != nil {
			t.Errorf("README example fails:\n%s\n%v", b[1], err)
			continue
		}
		if len(res.Rows) == 0 {
			t.Errorf("README example returns no rows:\n%s", b[1])
		}
	}
	for _, m := range regexp.MustCompile(`--name ([a-z_]+)`).FindAllStringSubmatch(text, -1) {
		if _, err := store.FindNamedQuery(m[1]); err != nil {
			t.Errorf("README names %s: %v", m[1], err)
		}
	}
	for _, m := range regexp.MustCompile("(?m)^\\| `([a-z_]+)` \\|").FindAllStringSubmatch(text, -1) {
		if _, err := st.Query(context.Background(), "SELECT * FROM "+m[1]+" LIMIT 1"); err != nil {
			t.Errorf("README lists view %s: %v", m[1], err)
		}
	}
}

// tally export --format iceberg commits the published copy's usage to the
// lake through tally-lake, says what it committed, and commits nothing
// when nothing changed; without tally-lake it says where to get it.
func TestExportIcebergCommand(t *testing.T) {
	cfg, pub := exportSetup(t)
	dir := filepath.Dir(cfg)
	t.Setenv(cliTokenEnv, "")
	onBinaryEnd(laketest.Remove)
	helper := laketest.Helper(t)

	path := os.Getenv("PATH")
	t.Setenv("PATH", t.TempDir())
	_, code, stderr := cli(t, "export", "--config", cfg, "--format", "iceberg")
	if code == job.ExitOK || !strings.Contains(stderr, "tally-lake") || !strings.Contains(stderr, "scripts/build") {
		t.Fatalf("without tally-lake: exit %d, stderr %q; want a failure naming tally-lake and how to build it", code, stderr)
	}

	t.Setenv("PATH", filepath.Dir(helper)+string(os.PathListSeparator)+path)
	out, code, stderr := cli(t, "export", "--config", cfg, "--format", "iceberg")
	if code != job.ExitOK {
		t.Fatalf("tally export --format iceberg: exit %d\n%s\n%s", code, out, stderr)
	}
	st := openCopy(t, pub)
	parts := lines(t, st, `SELECT count(DISTINCT (organization, date_trunc('month', date))) FROM usage`)[1]
	rows := lines(t, st, `SELECT count(*) FROM usage`)[1]
	summary := regexp.MustCompile(`(?m)^  tally\.usage\s+` + parts + ` partition\(s\) replaced in snapshot [0-9]+; ` + rows + ` rows \(`)
	if !summary.MatchString(out) {
		t.Fatalf("summary:\n%s\nwant %s partition(s) and %s rows committed to tally.usage", out, parts, rows)
	}
	// The files committed hold the copy's usage to the cent, cost exact.
	glob := sqlString(filepath.Join(dir, "exports", "lake", "warehouse", "tally.db", "usage", "data", "*", "*", "*.parquet"))
	got := lines(t, st, `SELECT organization, currency, count(*), sum(cost) FROM read_parquet(`+glob+`) GROUP BY ALL ORDER BY ALL`)
	want := lines(t, st, `SELECT organization, currency, count(*), sum(CAST(cost AS DECIMAL(38, 12))) FROM usage GROUP BY ALL ORDER BY ALL`)
	if !slices.Equal(got[1:], want[1:]) {
		t.Errorf("the lake's files:\n%v\nwant the copy's usage:\n%v", got, want)
	}

	out, code, _ = cli(t, "export", "--config", cfg, "--format", "iceberg")
	if code != job.ExitOK || !strings.Contains(out, "tally.usage") || !strings.Contains(out, "nothing changed since the last commit; nothing committed") {
		t.Fatalf("a second export: exit %d\n%s; want nothing committed", code, out)
	}

	// Maintenance with the config's ages: everything is younger than
	// them, so nothing goes; the dry run says so in the same words.
	for _, dry := range []bool{true, false} {
		args := []string{"lake", "maintain", "--config", cfg}
		verb := "expired"
		if dry {
			args, verb = append(args, "--dry-run"), "would expire"
		}
		out, code, stderr = cli(t, args...)
		if code != job.ExitOK || !strings.Contains(out, "lake tally.usage") ||
			!strings.Contains(out, "snapshots older than 7d: 0 "+verb+", 1 kept") || !strings.Contains(out, "files no snapshot holds, older than 3d: 0 ") {
			t.Fatalf("tally %s: exit %d\n%s\n%s", strings.Join(args, " "), code, out, stderr)
		}
	}
	if _, code, stderr := cli(t, "lake", "maintain"); code != job.ExitRefused || !strings.Contains(stderr, "--config is required") {
		t.Fatalf("tally lake maintain without --config: exit %d, %q", code, stderr)
	}
	if got := lines(t, st, `SELECT count(*) FROM read_parquet(`+glob+`)`)[1]; got != rows {
		t.Fatalf("after maintenance the lake's files hold %s rows, want %s", got, rows)
	}
}

// TestExportIcebergToPostgres: through the commands, the export commits
// to a PostgreSQL catalog (a real server) with its password from
// lake.password_env, into a warehouse folder of its own; without the
// password both commands stop at once with exit 2 naming the key; the
// password is printed nowhere.
func TestExportIcebergToPostgres(t *testing.T) {
	cfg, pub := exportSetup(t)
	dir := filepath.Dir(cfg)
	t.Setenv(cliTokenEnv, "")
	onBinaryEnd(laketest.Remove)
	onBinaryEnd(pgtest.Stop)
	t.Setenv("PATH", filepath.Dir(laketest.Helper(t))+string(os.PathListSeparator)+os.Getenv("PATH"))
	warehouse := filepath.Join(dir, "shared-lake")
	f, err := os.OpenFile(cfg, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(f, "lake:\n  catalog: %s\n  password_env: TALLY_TEST_LAKE_PASSWORD\n  warehouse: %s\n", pgtest.Database(t), warehouse)
	f.Close()

	t.Setenv("TALLY_TEST_LAKE_PASSWORD", "")
	for _, args := range [][]string{{"export", "--config", cfg, "--format", "iceberg"}, {"lake", "maintain", "--config", cfg}} {
		_, code, stderr := cli(t, args...)
		if code != job.ExitRefused || !strings.Contains(stderr, "lake.password_env: the environment variable TALLY_TEST_LAKE_PASSWORD is not set or empty") {
			t.Fatalf("tally %s without the password: exit %d, %q; want exit %d naming lake.password_env", strings.Join(args, " "), code, stderr, job.ExitRefused)
		}
	}
	if _, err := os.Stat(warehouse); !os.IsNotExist(err) {
		t.Fatalf("a refused export touched the warehouse: %v", err)
	}

	t.Setenv("TALLY_TEST_LAKE_PASSWORD", pgtest.Password)
	out, code, stderr := cli(t, "--log-level", "debug", "export", "--config", cfg, "--format", "iceberg")
	if code != job.ExitOK || !strings.Contains(out, "partition(s) replaced in snapshot") {
		t.Fatalf("tally export --format iceberg to PostgreSQL: exit %d\n%s\n%s", code, out, stderr)
	}
	mout, code, mstderr := cli(t, "lake", "maintain", "--config", cfg)
	if code != job.ExitOK || !strings.Contains(mout, "lake tally.usage") {
		t.Fatalf("tally lake maintain: exit %d\n%s\n%s", code, mout, mstderr)
	}
	for _, text := range []string{out, stderr, mout, mstderr} {
		if strings.Contains(text, pgtest.Password) {
			t.Fatalf("the catalog's password was printed:\n%s", text)
		}
	}
	st := openCopy(t, pub)
	glob := sqlString(filepath.Join(warehouse, "tally.db", "usage", "data", "*", "*", "*.parquet"))
	got := lines(t, st, `SELECT organization, currency, count(*), sum(cost) FROM read_parquet(`+glob+`) GROUP BY ALL ORDER BY ALL`)
	want := lines(t, st, `SELECT organization, currency, count(*), sum(CAST(cost AS DECIMAL(38, 12))) FROM usage GROUP BY ALL ORDER BY ALL`)
	if len(want) < 2 || !slices.Equal(got[1:], want[1:]) {
		t.Errorf("the lake's files:\n%v\nwant the copy's usage:\n%v", got, want)
	}
	if _, err := os.Stat(filepath.Join(dir, "exports", "lake")); !os.IsNotExist(err) {
		t.Errorf("with a PostgreSQL catalog and lake.warehouse, the export folder got a lake folder: %v", err)
	}
}

// TestExportIcebergToS3: through the commands, the export commits to a
// PostgreSQL catalog with its warehouse on a real S3 server, the keys from
// lake.s3.access_key_env and secret_key_file; without a key both commands
// stop at once with exit 2 naming it, and the bucket stays empty; the
// staging folder is empty after the export; the table read back through
// iceberg-go holds the copy's usage exactly, per organization, month and
// currency; no key and no password is printed anywhere.
func TestExportIcebergToS3(t *testing.T) {
	ctx := context.Background()
	cfg, pub := exportSetup(t)
	dir := filepath.Dir(cfg)
	t.Setenv(cliTokenEnv, "")
	onBinaryEnd(laketest.Remove)
	onBinaryEnd(pgtest.Stop)
	onBinaryEnd(s3test.Stop)
	t.Setenv("PATH", filepath.Dir(laketest.Helper(t))+string(os.PathListSeparator)+os.Getenv("PATH"))
	bucket := s3test.Bucket(t)
	secretFile := filepath.Join(dir, "s3-secret")
	if err := os.WriteFile(secretFile, []byte(s3test.SecretKey+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	catalog := pgtest.Database(t)
	f, err := os.OpenFile(cfg, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(f, "lake:\n  catalog: %s\n  password_env: TALLY_TEST_LAKE_PASSWORD\n  warehouse: s3://%s/finance\n  s3:\n    endpoint: %s\n    region: %s\n    path_style: true\n    access_key_env: TALLY_TEST_S3_ACCESS\n    secret_key_file: %s\n",
		catalog, bucket, s3test.Endpoint(t), s3test.Region, secretFile)
	f.Close()
	t.Setenv("TALLY_TEST_LAKE_PASSWORD", pgtest.Password)

	t.Setenv("TALLY_TEST_S3_ACCESS", "")
	for _, args := range [][]string{{"export", "--config", cfg, "--format", "iceberg"}, {"lake", "maintain", "--config", cfg}} {
		_, code, stderr := cli(t, args...)
		if code != job.ExitRefused || !strings.Contains(stderr, "lake.s3.access_key_env: the environment variable TALLY_TEST_S3_ACCESS is not set or empty") {
			t.Fatalf("tally %s without the access key: exit %d, %q; want exit %d naming lake.s3.access_key_env", strings.Join(args, " "), code, stderr, job.ExitRefused)
		}
	}
	if keys := s3test.Keys(t, bucket, ""); len(keys) != 0 {
		t.Fatalf("a refused export wrote to the bucket: %v", keys)
	}

	t.Setenv("TALLY_TEST_S3_ACCESS", s3test.AccessKey)
	out, code, stderr := cli(t, "--log-level", "debug", "export", "--config", cfg, "--format", "iceberg")
	if code != job.ExitOK || !strings.Contains(out, "partition(s) replaced in snapshot") || !strings.Contains(out, "s3://"+bucket+"/finance") {
		t.Fatalf("tally export --format iceberg to S3: exit %d\n%s\n%s", code, out, stderr)
	}
	staging := filepath.Join(dir, "exports", "lake", "staging")
	if left, err := os.ReadDir(staging); err != nil || len(left) != 0 {
		t.Fatalf("the staging folder %s after the export: %d file(s), %v; want it there and empty", staging, len(left), err)
	}
	mout, code, mstderr := cli(t, "lake", "maintain", "--config", cfg)
	if code != job.ExitOK || !strings.Contains(mout, "lake tally.usage") {
		t.Fatalf("tally lake maintain: exit %d\n%s\n%s", code, mout, mstderr)
	}
	for _, text := range []string{out, stderr, mout, mstderr} {
		for _, secret := range []string{s3test.AccessKey, s3test.SecretKey, pgtest.Password} {
			if strings.Contains(text, secret) {
				t.Fatalf("a secret was printed:\n%s", text)
			}
		}
	}
	if keys := s3test.Keys(t, bucket, "finance/tally.db/usage/data/"); len(keys) == 0 {
		t.Fatal("no data file in the bucket")
	}

	l, err := ice.Open(ctx, lake.Config{Postgres: catalog, Password: pgtest.Password, Warehouse: "s3://" + bucket + "/finance",
		S3: &lake.S3{Endpoint: s3test.Endpoint(t), Region: s3test.Region, PathStyle: true, AccessKey: s3test.AccessKey, SecretKey: s3test.SecretKey}})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	tb, err := l.LoadTable(ctx, lake.UsageTable)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(tb.Location(), "s3://"+bucket+"/finance/") || !strings.HasPrefix(tb.MetadataLocation(), "s3://"+bucket+"/finance/") {
		t.Fatalf("the table is at %s, its metadata at %s: want both in the bucket", tb.Location(), tb.MetadataLocation())
	}
	at, err := tb.Scan().ToArrowTable(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer at.Release()
	type total struct {
		rows int64
		cost *big.Int
	}
	got := map[string]*total{}
	tr := array.NewTableReader(at, 4096)
	defer tr.Release()
	for tr.Next() {
		rec := tr.RecordBatch()
		col := func(name string) arrow.Array { return rec.Column(rec.Schema().FieldIndices(name)[0]) }
		org, date, cur, cost := col("organization").(*array.String), col("date").(*array.Timestamp), col("currency").(*array.String), col("cost").(*array.Decimal128)
		for r := 0; r < int(rec.NumRows()); r++ {
			k := org.Value(r) + " " + time.UnixMicro(int64(date.Value(r))).UTC().Format("2006-01") + " " + cur.Value(r)
			if got[k] == nil {
				got[k] = &total{cost: new(big.Int)}
			}
			got[k].rows++
			got[k].cost.Add(got[k].cost, cost.Value(r).BigInt())
		}
	}
	st := openCopy(t, pub)
	want := lines(t, st, `SELECT organization || ' ' || strftime(date, '%Y-%m') || ' ' || currency, count(*), CAST(sum(CAST(cost AS DECIMAL(38, 12))) AS VARCHAR)
FROM usage GROUP BY ALL ORDER BY ALL`)
	if len(want) < 3 {
		t.Fatalf("the copy's usage: %v", want)
	}
	for _, line := range want[1:] {
		f := strings.Split(line, ",")
		d, err := tally.ParseDecimal(f[2])
		if err != nil {
			t.Fatal(err)
		}
		units, err := d.Scaled(12)
		if err != nil {
			t.Fatal(err)
		}
		g := got[f[0]]
		if g == nil || strconv.FormatInt(g.rows, 10) != f[1] || g.cost.String() != units.String() {
			t.Errorf("%s: the lake holds %+v; the copy %s rows costing %s", f[0], g, f[1], f[2])
		}
		delete(got, f[0])
	}
	if len(got) != 0 {
		t.Errorf("the lake holds partitions the copy lacks: %v", got)
	}

}
