package configs

import (
	"fmt"
	"strings"
	"testing"
)

func TestParseShard(t *testing.T) {
	for _, tc := range []struct {
		name, flag string
		env        map[string]string
		want       Shard // Source is checked apart
		source     string
	}{
		{"flag", "3/8", nil, Shard{Index: 3, Count: 8}, `--shard "3/8"`},
		{"one shard", "0/1", nil, Shard{Index: 0, Count: 1}, `--shard "0/1"`},
		{"the most", "1023/1024", nil, Shard{Index: 1023, Count: 1024}, `--shard "1023/1024"`},
		{"spaces around", " 1/2 ", nil, Shard{Index: 1, Count: 2}, `--shard " 1/2 "`},
		{"env", "", map[string]string{ShardEnv: "1/2"}, Shard{Index: 1, Count: 2}, `TALLY_SHARD "1/2"`},
		{"the flag wins", "0/4", map[string]string{ShardEnv: "1/2"}, Shard{Index: 0, Count: 4}, `--shard "0/4"`},
		{"flag /N, index from the job", "/8", map[string]string{ShardIndexEnv: "5"}, Shard{Index: 5, Count: 8}, `--shard "/8" (JOB_COMPLETION_INDEX "5")`},
		{"env /N, index from the job", "", map[string]string{ShardEnv: "/8", ShardIndexEnv: "7"}, Shard{Index: 7, Count: 8}, `TALLY_SHARD "/8" (JOB_COMPLETION_INDEX "7")`},
		{"an index given ignores the job's", "2/8", map[string]string{ShardIndexEnv: "5"}, Shard{Index: 2, Count: 8}, `--shard "2/8"`},
		{"neither", "", map[string]string{ShardIndexEnv: "5"}, Shard{}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseShard(tc.flag, func(k string) string { return tc.env[k] })
			if err != nil {
				t.Fatal(err)
			}
			if got.Index != tc.want.Index || got.Count != tc.want.Count || got.Source != tc.source {
				t.Errorf("ParseShard(%q) = %+v; want %+v from %s", tc.flag, got, tc.want, tc.source)
			}
		})
	}
}

func TestParseShardErrors(t *testing.T) {
	for _, tc := range []struct {
		name, flag string
		env        map[string]string
		want       string // the whole message
	}{
		{"index at the count", "3/2", nil, `--shard "3/2": the shard index must be below the count (0 to 1)`},
		{"index equal to the count", "2/2", nil, `--shard "2/2": the shard index must be below the count (0 to 1)`},
		{"not a spec", "", map[string]string{ShardEnv: "x"}, `TALLY_SHARD "x": want I/N, e.g. 0/8 (shard I of N, 0 <= I < N <= 1024), or /N on a Kubernetes Indexed Job (the index from JOB_COMPLETION_INDEX)`},
		{"no slash", "3", nil, `--shard "3": want I/N`},
		{"no count", "3/", nil, `--shard "3/": want I/N`},
		{"negative", "-1/2", nil, `--shard "-1/2": want I/N`},
		{"plus", "+1/2", nil, `--shard "+1/2": want I/N`},
		{"three parts", "1/2/3", nil, `--shard "1/2/3": want I/N`},
		{"words", "", map[string]string{ShardEnv: "shard 1 of 2"}, `TALLY_SHARD "shard 1 of 2": want I/N`},
		{"zero shards", "0/0", nil, `--shard "0/0": the shard count must be 1 to 1024`},
		{"too many shards", "0/1025", nil, `--shard "0/1025": the shard count must be 1 to 1024`},
		{"a count past int", "0/99999999999999999999999", nil, `--shard "0/99999999999999999999999": the shard count must be 1 to 1024`},
		{"an index past int", "99999999999999999999999/2", nil, `--shard "99999999999999999999999/2": the shard index must be below the count (0 to 1)`},
		{"/N without the job's index", "/8", nil,
			`--shard "/8" leaves the index out, so it comes from JOB_COMPLETION_INDEX (which a Kubernetes Indexed Job sets), and JOB_COMPLETION_INDEX is not set: give the index, e.g. 0/8, or set JOB_COMPLETION_INDEX`},
		{"env /N without the job's index", "", map[string]string{ShardEnv: "/8"},
			`TALLY_SHARD "/8" leaves the index out, so it comes from JOB_COMPLETION_INDEX`},
		{"the job's index past the count", "", map[string]string{ShardEnv: "/8", ShardIndexEnv: "8"},
			`TALLY_SHARD "/8" (JOB_COMPLETION_INDEX "8"): JOB_COMPLETION_INDEX "8", the shard index, must be below the count (0 to 7)`},
		{"the job's index not a number", "/8", map[string]string{ShardIndexEnv: "three"},
			`--shard "/8" (JOB_COMPLETION_INDEX "three"): JOB_COMPLETION_INDEX "three", the shard index, must be below the count (0 to 7)`},
		{"the job's index negative", "/8", map[string]string{ShardIndexEnv: "-1"}, `--shard "/8" (JOB_COMPLETION_INDEX "-1"): JOB_COMPLETION_INDEX "-1", the shard index, must be below the count (0 to 7)`},
		{"the job's index signed", "/8", map[string]string{ShardIndexEnv: "+1"}, `--shard "/8" (JOB_COMPLETION_INDEX "+1"): JOB_COMPLETION_INDEX "+1", the shard index, must be below the count (0 to 7)`},
		{"a bad env is not read past the flag", "1/2", map[string]string{ShardEnv: "x"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := ParseShard(tc.flag, func(k string) string { return tc.env[k] })
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("ParseShard(%q) = %v; want no error", tc.flag, err)
			case tc.want == "":
			case err == nil:
				t.Errorf("ParseShard(%q) = %+v; want the error %q", tc.flag, s, tc.want)
			case !strings.HasPrefix(err.Error(), tc.want):
				t.Errorf("ParseShard(%q):\n got %s\nwant %s", tc.flag, err, tc.want)
			}
		})
	}
}

// The hash is part of the interface: an operator works out which shard
// takes an organization, and a store made by one version must be taken by
// the same shard in the next. FNV-1a 64-bit of "a" is 0xaf63dc4c8601ec8c
// (the algorithm's published test vector), so shard 140 of 1024.
func TestShardOfIsPinned(t *testing.T) {
	for _, tc := range []struct {
		name  string
		count int
		want  int
	}{
		{"a", 1024, 0xaf63dc4c8601ec8c % 1024},
		{"a", 1024, 140},
		{"emea", 8, 5},
		{"us", 8, 1},
		{"apac", 8, 4},
		{"latam", 8, 0},
		{"japan", 8, 3},
		{"emea", 2, 1},
		{"us", 2, 1},
		{"apac", 2, 0},
		{"latam", 2, 0},
		{"emea", 1, 0},
		{"emea", 1024, 565},
		{"EMEA", 1024, 949}, // the name as written: case counts
	} {
		if got := ShardOf(tc.name, tc.count); got != tc.want {
			t.Errorf("ShardOf(%q, %d) = %d; want %d (the hash changed: every sharded store would be refused or split)", tc.name, tc.count, got, tc.want)
		}
	}
}

func TestEveryOrganizationInExactlyOneShard(t *testing.T) {
	var yml strings.Builder
	yml.WriteString("usage:\n  start: 2026-01-01\norganizations:\n")
	var names []string
	for i := range 300 {
		name := fmt.Sprintf("org-%03d", i)
		if i%3 == 0 {
			name = fmt.Sprintf("Customer.%d_eu", i*7919)
		}
		names = append(names, name)
		fmt.Fprintf(&yml, "  - name: %s\n    token_env: TOKEN_%d\n", name, i)
	}
	for _, n := range []int{1, 2, 3, 7, 8, 64, 1024} {
		takenBy := map[string]int{}
		nonEmpty := 0
		for i := range n {
			cfg := mustParse(t, yml.String(), noEnv)
			s := Shard{Index: i, Count: n, Source: fmt.Sprintf(`--shard "%d/%d"`, i, n)}
			if err := cfg.TakeShard(s); err != nil {
				t.Fatal(err)
			}
			if cfg.Listed != len(names) || cfg.Shard != s || !cfg.Grouped() {
				t.Fatalf("shard %s: Listed %d, Shard %+v, Grouped %v", s, cfg.Listed, cfg.Shard, cfg.Grouped())
			}
			if len(cfg.Orgs()) != len(cfg.Organizations) {
				t.Fatalf("shard %s: Orgs() has %d, Organizations %d", s, len(cfg.Orgs()), len(cfg.Organizations))
			}
			if len(cfg.Organizations) > 0 {
				nonEmpty++
			}
			for _, o := range cfg.Organizations {
				if !s.Takes(o.Name) {
					t.Errorf("shard %s kept %s, which it does not take", s, o.Name)
				}
				takenBy[o.Name]++
			}
		}
		for _, name := range names {
			if takenBy[name] != 1 {
				t.Errorf("N=%d: %s is taken by %d shards, want 1", n, name, takenBy[name])
			}
		}
		// 300 names over N shards: a hash that sent them all to a few
		// shards would be no use.
		if want := min(n, 150); nonEmpty < want {
			t.Errorf("N=%d: %d shards take any organization of 300, want at least %d", n, nonEmpty, want)
		}
	}
}

// A shard that takes none stays grouped with no organization: never the
// api: form's, whose token and name it does not have.
func TestShardTakingNone(t *testing.T) {
	cfg := mustParse(t, "usage:\n  start: 2026-01-01\norganizations:\n  - name: emea\n    token_env: T1\n  - name: us\n    token_env: T2\n", noEnv)
	// emea and us are both shard 1 of 2 (pinned above).
	if err := cfg.TakeShard(Shard{Index: 0, Count: 2}); err != nil {
		t.Fatal(err)
	}
	if !cfg.Grouped() || len(cfg.Orgs()) != 0 || len(cfg.Organizations) != 0 || cfg.Listed != 2 || len(cfg.ShardNames()) != 0 {
		t.Errorf("shard 0/2 of emea and us: Grouped %v, Orgs %+v, Listed %d; want grouped with none of 2", cfg.Grouped(), cfg.Orgs(), cfg.Listed)
	}
	if err := cfg.CheckSecrets(noEnv, []string{"fetch", "report"}); err != nil {
		t.Errorf("CheckSecrets of a shard taking none: %v", err)
	}
}

func TestShardRefusesTheAPIForm(t *testing.T) {
	cfg := mustParse(t, minimal, noEnv)
	err := cfg.TakeShard(Shard{Index: 0, Count: 2, Source: `--shard "0/2"`})
	if err == nil || !strings.HasPrefix(err.Error(), `--shard "0/2": this config has the api: form`) || !strings.Contains(err.Error(), "list them under organizations:") {
		t.Fatalf("TakeShard of the api: form: %v; want a refusal saying to list organizations", err)
	}
	if cfg.Grouped() || len(cfg.Organizations) != 1 || !cfg.Shard.IsZero() {
		t.Errorf("a refused shard changed the config: %+v", cfg)
	}
	// No shard is no change.
	if err := cfg.TakeShard(Shard{}); err != nil || len(cfg.Organizations) != 1 {
		t.Errorf("TakeShard(zero) = %v, %d organizations", err, len(cfg.Organizations))
	}
}
