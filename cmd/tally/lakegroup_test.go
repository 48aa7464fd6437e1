package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tally-dev/tally/internal/testkit/laketest"
	"github.com/tally-dev/tally/internal/testkit/pgtest"
	"github.com/tally-dev/tally/internal/testkit/s3test"
	"github.com/tally-dev/tally/job"
	"github.com/tally-dev/tally/reports"
)

// TestGroupBookFromTheLake: two shards, each its own config and database
// with one organization, fetch and export to one lake (one catalog, one
// warehouse). A group job with usage.source lake over both organizations,
// holding no token, loads the lake: its usage equals the union of the
// shards', and its group workbook's By organization sheet agrees with
// each shard's own workbook. A second group fetch loads nothing; after
// one shard fetches a month again and exports it, the group loads exactly
// that shard's partitions again.
func TestGroupBookFromTheLake(t *testing.T) {
	g := newOrgGroup(t)
	onBinaryEnd(laketest.Remove)
	t.Setenv("PATH", filepath.Dir(laketest.Helper(t))+string(os.PathListSeparator)+os.Getenv("PATH"))
	shared := t.TempDir()
	lakeKeys := fmt.Sprintf("lake:\n  catalog: sqlite:%s\n  warehouse: %s\n", filepath.Join(shared, "catalog.db"), filepath.Join(shared, "warehouse"))
	g.extra = "export:\n  format: iceberg\n" + lakeKeys
	m := g.month.Format("2006-01")
	shardDirs := map[string]string{}
	var want []string
	for _, shard := range []string{"emea", "us"} {
		dir := t.TempDir()
		shardDirs[shard] = dir
		cfg := g.config(t, dir, shard)
		for _, args := range [][]string{{"fetch"}, {"report", "--month", m, "--org", shard}, {"export"}} {
			if out, code, stderr := cli(t, append(args, "--config", cfg)...); code != job.ExitOK {
				t.Fatalf("shard %s: tally %s: exit %d\n%s\n%s", shard, args[0], code, out, stderr)
			}
		}
		want = append(want, sums(t, filepath.Join(dir, "tally.duckdb"), "usage")...)
	}
	slices.Sort(want)

	group := t.TempDir()
	gcfg := filepath.Join(group, "tally.yaml")
	if err := os.WriteFile(gcfg, []byte(fmt.Sprintf(`organizations:
  - name: emea
  - name: us
usage:
  source: lake
  granularity: day
  start: %s
store:
  path: tally.duckdb
reports:
  dir: reports
  months: [previous]
%s`, g.start.Format("2006-01-02"), lakeKeys)), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TALLY_TEST_TOKEN_EMEA", "")
	t.Setenv("TALLY_TEST_TOKEN_US", "")
	out, code, stderr := cli(t, "fetch", "--config", gcfg)
	parts := len(want) // each organization's months, one currency each
	if code != job.ExitOK || !strings.Contains(out, fmt.Sprintf("lake partitions: %d changed, %d loaded, 0 failed", parts, parts)) {
		t.Fatalf("group fetch from the lake: exit %d\n%s\n%s", code, out, stderr)
	}
	db := filepath.Join(group, "tally.duckdb")
	if got := sums(t, db, "usage"); !slices.Equal(got, want) {
		t.Fatalf("the group's usage:\n  %v\nwant the shards':\n  %v", got, want)
	}
	if _, code, stderr := cli(t, "report", "--config", gcfg, "--month", m); code != job.ExitOK {
		t.Fatalf("group report: exit %d\n%s", code, stderr)
	}
	byOrgAgrees(t, reports.DefaultPath(filepath.Join(group, "reports"), g.month), func(org string) string {
		return reports.OrgPath(filepath.Join(shardDirs[org], "reports"), g.month, org)
	}, "emea", "us")

	out, code, stderr = cli(t, "fetch", "--config", gcfg)
	if code != job.ExitOK || !strings.Contains(out, "lake partitions: 0 changed, 0 loaded, 0 failed") {
		t.Fatalf("a second group fetch with the lake unchanged: exit %d\n%s\n%s; want nothing loaded", code, out, stderr)
	}
	before := scalarText(t, db, `SELECT string_agg(organization || ' ' || strftime(month, '%Y-%m') || ' ' || snapshot_id, ', ' ORDER BY organization, month) FROM lake_loads`)

	// us fetches last month again and exports it: a new file for each of
	// its partitions the window touched, the same rows.
	ucfg := filepath.Join(shardDirs["us"], "tally.yaml")
	t.Setenv("TALLY_TEST_TOKEN_US", g.us.Token())
	for _, args := range [][]string{{"fetch", "--refetch", "--from", m + "-01", "--to", g.month.AddDate(0, 1, 0).Format("2006-01-02")}, {"export"}} {
		if out, code, stderr := cli(t, append(args, "--config", ucfg)...); code != job.ExitOK {
			t.Fatalf("shard us: tally %s: exit %d\n%s\n%s", args[0], code, out, stderr)
		}
	}
	out, code, stderr = cli(t, "fetch", "--config", gcfg)
	if code != job.ExitOK || !strings.Contains(out, "lake partitions: 1 changed, 1 loaded, 0 failed") {
		t.Fatalf("group fetch after us re-exported last month: exit %d\n%s\n%s; want exactly that partition loaded", code, out, stderr)
	}
	after := scalarText(t, db, `SELECT string_agg(organization || ' ' || strftime(month, '%Y-%m') || ' ' || snapshot_id, ', ' ORDER BY organization, month) FROM lake_loads`)
	if before == after {
		t.Fatalf("lake_loads unchanged after a partition was reloaded: %s", after)
	}
	// The group closes the month from the lake's figures.
	if out, code, stderr := cli(t, "close", "--config", gcfg, "--month", m); code != job.ExitOK {
		t.Fatalf("group close of %s: exit %d\n%s\n%s", m, code, out, stderr)
	}
	if got := scalarText(t, db, `SELECT string_agg(DISTINCT organization, ',' ORDER BY organization) FROM closed_months`); got != "emea,us" {
		t.Errorf("closed months of %q, want emea's and us's", got)
	}
	// status and plan say where the usage comes from, and ask no token.
	out, code, stderr = cli(t, "status", "--config", gcfg)
	if code != job.ExitOK || strings.Contains(out, "token") || !strings.Contains(out, "source") || !strings.Contains(out, "lake: the usage of 2 organization(s)") {
		t.Fatalf("tally status of the group: exit %d\n%s\n%s", code, out, stderr)
	}
	out, code, stderr = cli(t, "plan", "--config", gcfg)
	if code != job.ExitOK || !strings.Contains(out, "usage.source lake: a fetch loads, for 2 organization(s), the partitions") {
		t.Fatalf("tally plan of the group: exit %d\n%s\n%s", code, out, stderr)
	}
	if got := sums(t, db, "usage"); !slices.Equal(got, want) {
		t.Fatalf("after the reload the group's usage:\n  %v\nwant the shards':\n  %v", got, want)
	}

	// A partition whose file cannot be read fails alone, and keeps the
	// month as it was; with no other partition due the run fails (exit 1,
	// as a fetch whose every window failed), naming it, and the next run
	// loads it once it can.
	ecfg := filepath.Join(shardDirs["emea"], "tally.yaml")
	t.Setenv("TALLY_TEST_TOKEN_EMEA", g.emea.Token())
	for _, args := range [][]string{{"fetch", "--refetch", "--from", m + "-01", "--to", g.month.AddDate(0, 1, 0).Format("2006-01-02")}, {"export"}} {
		if out, code, stderr := cli(t, append(args, "--config", ecfg)...); code != job.ExitOK {
			t.Fatalf("shard emea: tally %s: exit %d\n%s\n%s", args[0], code, out, stderr)
		}
	}
	newest, err := filepath.Glob(filepath.Join(shared, "warehouse", "tally.db", "usage", "data", "emea", m, "*.parquet"))
	if err != nil || len(newest) < 2 {
		t.Fatalf("emea's files of %s: %v, %v; want the first export's and the new one", m, newest, err)
	}
	slices.SortFunc(newest, func(a, b string) int {
		ia, _ := os.Stat(a)
		ib, _ := os.Stat(b)
		return ia.ModTime().Compare(ib.ModTime())
	})
	hidden := newest[len(newest)-1] + ".away"
	if err := os.Rename(newest[len(newest)-1], hidden); err != nil {
		t.Fatal(err)
	}
	out, code, stderr = cli(t, "fetch", "--config", gcfg)
	if code != job.ExitFailed || !strings.Contains(out, "lake partitions: 1 changed, 0 loaded, 1 failed") ||
		!strings.Contains(stderr, "usage.source lake: none of the 1 partitions due loaded; the first: read the lake's files") || !strings.Contains(stderr, `"organization":"emea","month":"`+m+`"`) {
		t.Fatalf("group fetch with emea's new file unreadable: exit %d\n%s\n%s; want exit %d naming the partition", code, out, stderr, job.ExitFailed)
	}
	if got := sums(t, db, "usage"); !slices.Equal(got, want) {
		t.Fatalf("a failed partition changed the group's usage:\n  %v\nwant:\n  %v", got, want)
	}
	if err := os.Rename(hidden, newest[len(newest)-1]); err != nil {
		t.Fatal(err)
	}
	out, code, stderr = cli(t, "fetch", "--config", gcfg)
	if code != job.ExitOK || !strings.Contains(out, "lake partitions: 1 changed, 1 loaded, 0 failed") {
		t.Fatalf("group fetch with the file back: exit %d\n%s\n%s; want the partition loaded", code, out, stderr)
	}
}

// TestGroupFromTheLakeOnS3: with the lake in a PostgreSQL catalog and an
// S3 bucket (real servers), a shard exports and a group job reads its
// organization back: tally-lake downloads the files DuckDB cannot read on
// S3 into a temporary folder, removed after, and the group's usage is the
// shard's.
func TestGroupFromTheLakeOnS3(t *testing.T) {
	g := newOrgGroup(t)
	onBinaryEnd(laketest.Remove)
	onBinaryEnd(pgtest.Stop)
	onBinaryEnd(s3test.Stop)
	t.Setenv("PATH", filepath.Dir(laketest.Helper(t))+string(os.PathListSeparator)+os.Getenv("PATH"))
	t.Setenv("TALLY_TEST_LAKE_PASSWORD", pgtest.Password)
	t.Setenv("TALLY_TEST_S3_ACCESS", s3test.AccessKey)
	t.Setenv("TALLY_TEST_S3_SECRET", s3test.SecretKey)
	lakeKeys := fmt.Sprintf("lake:\n  catalog: %s\n  password_env: TALLY_TEST_LAKE_PASSWORD\n  warehouse: s3://%s/finance\n  s3: {endpoint: %s, region: %s, path_style: true, access_key_env: TALLY_TEST_S3_ACCESS, secret_key_env: TALLY_TEST_S3_SECRET}\n",
		pgtest.Database(t), s3test.Bucket(t), s3test.Endpoint(t), s3test.Region)
	g.extra = "export:\n  format: iceberg\n" + lakeKeys
	shard := t.TempDir()
	cfg := g.config(t, shard, "emea")
	for _, args := range [][]string{{"fetch"}, {"export"}} {
		if out, code, stderr := cli(t, append(args, "--config", cfg)...); code != job.ExitOK {
			t.Fatalf("shard: tally %s: exit %d\n%s\n%s", args[0], code, out, stderr)
		}
	}
	want := sums(t, filepath.Join(shard, "tally.duckdb"), "usage")

	group := t.TempDir()
	gcfg := filepath.Join(group, "tally.yaml")
	if err := os.WriteFile(gcfg, []byte(fmt.Sprintf("organizations:\n  - name: emea\nusage:\n  source: lake\n  granularity: day\n  start: %s\nstore:\n  path: tally.duckdb\n%s",
		g.start.Format("2006-01-02"), lakeKeys)), 0o600); err != nil {
		t.Fatal(err)
	}
	before, _ := filepath.Glob(filepath.Join(os.TempDir(), "tally-lake-read-*"))
	out, code, stderr := cli(t, "fetch", "--config", gcfg)
	if code != job.ExitOK || !strings.Contains(out, fmt.Sprintf("lake partitions: %d changed, %d loaded, 0 failed", len(want), len(want))) {
		t.Fatalf("group fetch from the lake on S3: exit %d\n%s\n%s", code, out, stderr)
	}
	if got := sums(t, filepath.Join(group, "tally.duckdb"), "usage"); !slices.Equal(got, want) {
		t.Fatalf("the group's usage read from S3:\n  %v\nwant the shard's:\n  %v", got, want)
	}
	if after, _ := filepath.Glob(filepath.Join(os.TempDir(), "tally-lake-read-*")); len(after) != len(before) {
		t.Errorf("the downloads were left behind: %v", after)
	}
	for _, text := range []string{out, stderr} {
		for _, secret := range []string{s3test.AccessKey, s3test.SecretKey, pgtest.Password} {
			if strings.Contains(text, secret) {
				t.Fatalf("a secret was printed:\n%s", text)
			}
		}
	}
}
