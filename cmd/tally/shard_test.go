package main

import (
	"fmt"
	"maps"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tally-dev/tally"
	"github.com/tally-dev/tally/configs"
	"github.com/tally-dev/tally/fetch/sim"
	"github.com/tally-dev/tally/job"
	"github.com/tally-dev/tally/reports"
)

// shardAsOf is the day every sharded run is run as of: the simulated
// organizations' clock stops that morning, so nothing depends on the wall
// clock.
var shardAsOf = time.Date(2026, 10, 15, 0, 0, 0, 0, time.UTC)

// The four organizations of shardGroup, by the shard of 2 that takes each
// (configs.ShardOf, pinned in configs' TestShardOfIsPinned).
var shardsOf2 = [2][]string{{"apac", "latam"}, {"emea", "us"}}

// shardGroup is four simulated organizations behind one address, each its
// own token, seed and currency, with usage from 2026-09-01 to shardAsOf.
type shardGroup struct {
	orgs map[string]*sim.Server
	url  string
}

func newShardGroup(t *testing.T) *shardGroup {
	t.Helper()
	now := shardAsOf.Add(6 * time.Hour)
	g := &shardGroup{orgs: map[string]*sim.Server{}}
	var servers []*sim.Server
	for i, name := range []string{"emea", "us", "apac", "latam"} {
		cur := "USD"
		if i%2 == 0 {
			cur = "EUR"
		}
		s := sim.New(sim.Options{Token: fmt.Sprintf("tok-%s-%d4f1c9a2e7b05d38", name, i), Seed: int64(41 + i),
			Start: shardAsOf.AddDate(0, -1, -14), Now: func() time.Time { return now }, OrgName: strings.ToUpper(name) + " Media", Currency: cur})
		g.orgs[name] = s
		servers = append(servers, s)
		t.Setenv("TALLY_TEST_TOKEN_"+strings.ToUpper(name), s.Token())
	}
	group, err := sim.NewGroup(servers...)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(group)
	t.Cleanup(srv.Close)
	g.url = srv.URL
	for _, k := range []string{"TALLY_BASE_URL", "TALLY_DB", "TALLY_AS_OF", configs.ShardEnv, configs.ShardIndexEnv} {
		t.Setenv(k, "")
	}
	return g
}

// config writes a config in a folder of its own listing orgs, whose one
// job fetches, writes the previous month's workbooks and exports Parquet.
func (g *shardGroup) config(t *testing.T, orgs ...string) string {
	t.Helper()
	var list strings.Builder
	for _, o := range orgs {
		fmt.Fprintf(&list, "  - name: %s\n    token_env: TALLY_TEST_TOKEN_%s\n", o, strings.ToUpper(o))
	}
	cfg := filepath.Join(t.TempDir(), "tally.yaml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(`api:
  base_url: %s
  max_retries: 0
  timeout: 20s
organizations:
%susage:
  granularity: day
  start: 2026-09-01
  lookback: 1d
store:
  path: tally.duckdb
reports:
  dir: reports
  months: [previous]
export:
  dir: exports
schedule:
  lock_wait: 100ms
  jobs:
    - name: nightly
      cron: "@daily"
      run: [fetch, report, export]
`, g.url, list.String())), 0o600); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// requests counts the requests each organization was sent.
func (g *shardGroup) requests() map[string]int64 {
	out := map[string]int64{}
	for name, s := range g.orgs {
		out[name] = s.Requests()
	}
	return out
}

// storeOrgs is what a store holds of each organization: the names in its
// organizations table, and those its usage rows, ledger and export carry.
func storeOrgs(t *testing.T, cfg string) (table, usage, ledger, exported []string) {
	t.Helper()
	dir := filepath.Dir(cfg)
	db := filepath.Join(dir, "tally.duckdb")
	list := func(q string) []string {
		s := scalarText(t, db, q)
		if s == "" {
			return nil
		}
		return strings.Split(s, ",")
	}
	table = list(`SELECT coalesce(string_agg(name, ',' ORDER BY name), '') FROM organizations`)
	usage = list(`SELECT coalesce(string_agg(DISTINCT organization, ',' ORDER BY organization), '') FROM usage`)
	ledger = list(`SELECT coalesce(string_agg(DISTINCT organization, ',' ORDER BY organization), '') FROM fetch_windows`)
	exported = list(`SELECT coalesce(string_agg(DISTINCT organization, ',' ORDER BY organization), '') FROM read_parquet('` +
		filepath.ToSlash(filepath.Join(dir, "exports")) + `/usage/*/*.parquet', hive_partitioning = true)`)
	return table, usage, ledger, exported
}

// Two shards of 2 over four organizations, each into its own store: each
// shard fetches, reports and exports exactly the organizations its hash
// gives it, sends nothing to the others, and together they hold every
// organization once, each exactly as the interface has it. Shard 0 comes
// from --shard (which wins over TALLY_SHARD), shard 1 from TALLY_SHARD=/2
// and JOB_COMPLETION_INDEX=1, as on a Kubernetes Indexed Job.
func TestShardsSplitTheOrganizations(t *testing.T) {
	g := newShardGroup(t)
	all := []string{"apac", "emea", "latam", "us"}
	asOf := shardAsOf.Format(tally.DateLayout)
	month := tally.Month.Truncate(shardAsOf).AddDate(0, -1, 0)
	cfgs := [2]string{g.config(t, all...), g.config(t, all...)}

	var union []string
	for i, cfg := range cfgs {
		args := []string{"run", "--config", cfg, "--as-of", asOf, "--log-format", "json"}
		if i == 0 {
			args = append(args, "--shard", "0/2")
			t.Setenv(configs.ShardEnv, "/2") // the flag wins
			t.Setenv(configs.ShardIndexEnv, "1")
		} else {
			t.Setenv(configs.ShardEnv, "/2")
			t.Setenv(configs.ShardIndexEnv, "1")
		}
		before := g.requests()
		out, code, stderr := cli(t, args...)
		if code != job.ExitOK {
			t.Fatalf("shard %d: exit %d\n%s\n%s", i, code, out, stderr)
		}
		want := shardsOf2[i]
		if line := fmt.Sprintf("shard %d/2 takes 2 of the config's 4 organizations: %s", i, strings.Join(want, ", ")); !strings.Contains(stderr, line) {
			t.Errorf("shard %d does not log %q:\n%s", i, line, stderr)
		}
		after := g.requests()
		for name := range g.orgs {
			sent := after[name] - before[name]
			if taken := slices.Contains(want, name); taken != (sent > 0) {
				t.Errorf("shard %d sent %d requests to %s (taken: %v)", i, sent, name, taken)
			}
		}
		table, usage, ledger, exported := storeOrgs(t, cfg)
		for what, got := range map[string][]string{"organizations": table, "usage": usage, "fetch_windows": ledger, "the export": exported} {
			if !slices.Equal(got, want) {
				t.Errorf("shard %d: %s holds %v, want %v", i, what, got, want)
			}
		}
		// Each organization's figures are its own truth, and its own
		// workbook is written; none of the other shard's.
		got := loadedByOrg(t, filepath.Join(filepath.Dir(cfg), "tally.duckdb"), month)
		for _, name := range all {
			book := reports.OrgPath(filepath.Join(filepath.Dir(cfg), "reports"), month, name)
			_, err := os.Stat(book)
			if !slices.Contains(want, name) {
				if err == nil || len(got[name]) > 0 {
					t.Errorf("shard %d wrote %s's workbook or loaded its usage (%v)", i, name, got[name])
				}
				continue
			}
			if err != nil {
				t.Errorf("shard %d: no workbook of %s: %v", i, name, err)
			}
			s := g.orgs[name]
			truth := s.Truth(tally.UsageQuery{Window: tally.Window{Start: month, End: month.AddDate(0, 1, 0), Granularity: tally.Day}})
			var wantFig []string
			for cur, cost := range truth.Cost {
				wantFig = append(wantFig, fmt.Sprintf("%s|%s|%s|%s", name, s.OrgID(), cur, cost.Rat().RatString()))
			}
			slices.Sort(wantFig)
			if !slices.Equal(got[name], wantFig) || len(wantFig) == 0 {
				t.Errorf("shard %d loaded %s as\n  %v\nwant its truth\n  %v", i, name, got[name], wantFig)
			}
		}
		union = append(union, table...)
	}
	slices.Sort(union)
	if !slices.Equal(union, all) {
		t.Errorf("the two shards hold %v together, want every organization once: %v", union, all)
	}
}

// A shard that takes none of the config's organizations does nothing and
// says so: no request, exit 0, an ok run whose warning names the shard.
// Never the api: form's fetch of "everything".
func TestShardTakingNoneDoesNothing(t *testing.T) {
	g := newShardGroup(t)
	cfg := g.config(t, shardsOf2[1]...) // emea and us: both shard 1 of 2
	out, code, stderr := cli(t, "run", "--config", cfg, "--shard", "0/2", "--as-of", shardAsOf.Format(tally.DateLayout), "--log-format", "json")
	if code != job.ExitOK {
		t.Fatalf("shard 0/2 of emea and us: exit %d, want 0\n%s\n%s", code, out, stderr)
	}
	if !strings.Contains(stderr, `"level":"warn"`) || !strings.Contains(stderr, "shard 0/2 takes none of the config's 2 organizations") {
		t.Errorf("no warning that the shard takes none:\n%s", stderr)
	}
	for name, n := range g.requests() {
		if n != 0 {
			t.Errorf("%d requests sent to %s by a shard that takes none", n, name)
		}
	}
	db := filepath.Join(filepath.Dir(cfg), "tally.duckdb")
	if got := scalarText(t, db, `SELECT status || ' ' || job || ' ' || warnings FROM runs`); got != "ok nightly shard 0/2 takes none of the config's 2 organizations: nothing fetched, no step run" {
		t.Errorf("the run's record: %q", got)
	}
	if n := scalarText(t, db, `SELECT (SELECT count(*) FROM usage) + (SELECT count(*) FROM organizations) + (SELECT count(*) FROM fetch_windows)`); n != "0" {
		t.Errorf("%s rows of usage, organizations and windows in the store of a shard that takes none", n)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(cfg), "reports")); !os.IsNotExist(err) {
		t.Errorf("a shard that takes none wrote reports: %v", err)
	}
}

// What the shard is refused for, each exit 2 naming what to change, with
// nothing sent and no store made (or, for a store of another shard, the
// store left as it was).
func TestShardRefusals(t *testing.T) {
	g := newShardGroup(t)
	asOf := shardAsOf.Format(tally.DateLayout)
	cfg := g.config(t, "apac", "emea", "latam", "us")
	db := filepath.Join(filepath.Dir(cfg), "tally.duckdb")
	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
		want string
	}{
		{"index past the count", []string{"--shard", "3/2"}, nil, `tally: --shard "3/2": the shard index must be below the count (0 to 1)`},
		{"not a spec", nil, map[string]string{configs.ShardEnv: "x"}, `tally: TALLY_SHARD "x": want I/N, e.g. 0/8`},
		{"too many", []string{"--shard", "0/2000"}, nil, `tally: --shard "0/2000": the shard count must be 1 to 1024`},
		{"empty flag", []string{"--shard", ""}, map[string]string{configs.ShardEnv: "0/2"}, `tally: --shard "": want I/N, e.g. 0/8`},
		{"no index anywhere", []string{"--shard", "/2"}, nil,
			`tally: --shard "/2" leaves the index out, so it comes from JOB_COMPLETION_INDEX (which a Kubernetes Indexed Job sets), and JOB_COMPLETION_INDEX is not set`},
		{"the job's index past the count", nil, map[string]string{configs.ShardEnv: "/2", configs.ShardIndexEnv: "2"},
			`tally: TALLY_SHARD "/2" (JOB_COMPLETION_INDEX "2"): JOB_COMPLETION_INDEX "2", the shard index, must be below the count (0 to 1)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			for _, command := range []string{"run", "schedule"} {
				args := append([]string{command, "--config", cfg}, tc.args...)
				if command == "run" {
					args = append(args, "--as-of", asOf)
				}
				_, code, stderr := cli(t, args...)
				if code != job.ExitRefused || !strings.Contains(stderr, tc.want) {
					t.Errorf("%s: exit %d, want %d saying\n  %s\ngot\n  %s", command, code, job.ExitRefused, tc.want, stderr)
				}
			}
			if _, err := os.Stat(db); !os.IsNotExist(err) {
				t.Fatalf("a refused shard made the store: %v", err)
			}
		})
	}

	t.Run("the api: form", func(t *testing.T) {
		s := newCLISim(t, shardAsOf.AddDate(0, -1, 0))
		single, singleDB := cliConfig(t, s, shardAsOf.AddDate(0, -1, 0), "")
		t.Setenv(configs.ShardEnv, "/2")
		t.Setenv(configs.ShardIndexEnv, "0")
		_, code, stderr := cli(t, "run", "--config", single, "--as-of", asOf)
		want := `tally: TALLY_SHARD "/2" (JOB_COMPLETION_INDEX "0"): this config has the api: form, one organization with no name to shard by; to run organizations in shards, list them under organizations:`
		if code != job.ExitRefused || !strings.Contains(stderr, want) {
			t.Errorf("a shard of the api: form: exit %d, want %d saying\n  %s\ngot\n  %s", code, job.ExitRefused, want, stderr)
		}
		if _, err := os.Stat(singleDB); !os.IsNotExist(err) || s.sim.Requests() != 0 {
			t.Errorf("the refusal made the store (%v) or sent %d requests", err, s.sim.Requests())
		}
	})

	t.Run("a store of another shard", func(t *testing.T) {
		// Shard 0 of 2 makes the store: apac and latam.
		if _, code, stderr := cli(t, "run", "--config", cfg, "--shard", "0/2", "--as-of", asOf); code != job.ExitOK {
			t.Fatalf("shard 0/2: exit %d\n%s", code, stderr)
		}
		runs := scalarText(t, db, `SELECT count(*) FROM runs`)
		// Shard 0 of 4 takes both (their hashes are 0 modulo 4 too): the
		// store is its own.
		if _, code, stderr := cli(t, "run", "--config", cfg, "--shard", "0/4", "--as-of", asOf); code != job.ExitOK {
			t.Fatalf("shard 0/4 on shard 0/2's store of apac and latam: exit %d\n%s", code, stderr)
		}
		runs = fmt.Sprint(atoi(t, runs) + 1)
		before := g.requests()
		for _, tc := range []struct{ shard, want string }{
			{"1/2", `--shard "1/2": the store ` + db + ` holds organizations apac (shard 0/2), latam (shard 0/2), which shard 1/2 does not take`},
			{"2/4", `--shard "2/4": the store ` + db + ` holds organizations apac (shard 0/4), latam (shard 0/4), which shard 2/4 does not take`},
			{"1/3", `--shard "1/3": the store ` + db + ` holds organizations apac (shard 2/3), latam (shard 0/3), which shard 1/3 does not take`},
		} {
			_, code, stderr := cli(t, "run", "--config", cfg, "--shard", tc.shard, "--as-of", asOf)
			if code != job.ExitRefused || !strings.Contains(stderr, tc.want) || !strings.Contains(stderr, "give this shard a store of its own (store.path, or TALLY_DB)") {
				t.Errorf("shard %s on shard 0/2's store: exit %d, want %d saying\n  %s\ngot\n  %s", tc.shard, code, job.ExitRefused, tc.want, stderr)
			}
		}
		if got := g.requests(); !maps.Equal(got, before) {
			t.Errorf("refused shards sent requests: %v, before %v", got, before)
		}
		if got := scalarText(t, db, `SELECT count(*) FROM runs`); got != runs {
			t.Errorf("%s runs recorded after the refusals, want %s (a refusal begins no run)", got, runs)
		}
		if table, _, _, _ := storeOrgs(t, cfg); !slices.Equal(table, shardsOf2[0]) {
			t.Errorf("the store holds %v after the refusals, want %v", table, shardsOf2[0])
		}
	})
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	var n int
	if _, err := fmt.Sscan(s, &n); err != nil {
		t.Fatal(err)
	}
	return n
}
