package configs

import (
	"errors"
	"fmt"
	"hash/fnv"
	"regexp"
	"strconv"
	"strings"
)

// ShardEnv is the environment variable that gives --shard when the flag
// is left out: a deployment sets it once for every pod.
const ShardEnv = "TALLY_SHARD"

// ShardIndexEnv is the variable a Kubernetes Indexed Job sets in each pod
// (0 to completions-1): a spec "/N" takes its index from it.
const ShardIndexEnv = "JOB_COMPLETION_INDEX"

// MaxShards is the most shards a spec may give.
const MaxShards = 1024

// Shard is one of Count shards of an organizations: config (tally run
// --shard I/N): the organizations whose ShardOf is Index. The zero Shard is
// no sharding: every organization.
type Shard struct {
	Index, Count int
	// Source is where the spec came from, for messages: `--shard "1/8"`,
	// or `TALLY_SHARD "/8" (JOB_COMPLETION_INDEX 1)`.
	Source string
}

// IsZero reports whether s is no sharding.
func (s Shard) IsZero() bool { return s.Count == 0 }

// String is s as a spec, I/N.
func (s Shard) String() string { return fmt.Sprintf("%d/%d", s.Index, s.Count) }

// ShardOf is the shard of count that takes the organization named name:
// the FNV-1a 64-bit hash of the name's UTF-8 bytes, modulo count. It
// depends on the name alone, never on the version, the machine or the
// order of the config, so an operator can work it out beforehand
// (docs/operators.md "Shards"); a test pins it.
func ShardOf(name string, count int) int {
	h := fnv.New64a()
	h.Write([]byte(name))
	return int(h.Sum64() % uint64(count))
}

// Takes reports whether s takes the organization named name (every
// organization when s is zero).
func (s Shard) Takes(name string) bool {
	return s.IsZero() || ShardOf(name, s.Count) == s.Index
}

var shardSpecRE = regexp.MustCompile(`^([0-9]*)/([0-9]+)$`)

// ParseShard reads a shard spec: spec is --shard's value, "" when the flag
// was not given, and then getenv(ShardEnv) is read instead; neither set is
// the zero Shard (every organization). A spec is I/N, 0 <= I < N <= 1024,
// or /N, whose index comes from getenv(ShardIndexEnv) (a Kubernetes
// Indexed Job's pod). Every error names the flag or variable, its value and
// what is allowed.
func ParseShard(spec string, getenv func(string) string) (Shard, error) {
	name := "--shard"
	if spec == "" {
		name, spec = ShardEnv, getenv(ShardEnv)
		if spec == "" {
			return Shard{}, nil
		}
	}
	s := Shard{Source: fmt.Sprintf("%s %q", name, spec)}
	m := shardSpecRE.FindStringSubmatch(strings.TrimSpace(spec))
	if m == nil {
		return Shard{}, fmt.Errorf("%s: want I/N, e.g. 0/8 (shard I of N, 0 <= I < N <= %d), or /N on a Kubernetes Indexed Job (the index from %s)", s.Source, MaxShards, ShardIndexEnv)
	}
	n, err := strconv.Atoi(m[2])
	if err != nil || n < 1 || n > MaxShards {
		return Shard{}, fmt.Errorf("%s: the shard count must be 1 to %d", s.Source, MaxShards)
	}
	s.Count = n
	index, from := m[1], ""
	if index == "" {
		index = strings.TrimSpace(getenv(ShardIndexEnv))
		if index == "" {
			return Shard{}, fmt.Errorf("%s leaves the index out, so it comes from %s (which a Kubernetes Indexed Job sets), and %s is not set: give the index, e.g. 0/%d, or set %s", s.Source, ShardIndexEnv, ShardIndexEnv, n, ShardIndexEnv)
		}
		from = fmt.Sprintf("%s %q", ShardIndexEnv, index)
		s.Source += " (" + from + ")"
	}
	i, err := strconv.Atoi(index)
	if err != nil || i < 0 || i >= n || strings.HasPrefix(index, "+") {
		what := "the shard index"
		if from != "" {
			what = from + ", the shard index,"
		}
		return Shard{}, fmt.Errorf("%s: %s must be below the count (0 to %d)", s.Source, what, n-1)
	}
	s.Index = i
	return s, nil
}

// TakeShard keeps in c.Organizations only the organizations s takes, and
// records s (c.Shard) and how many the config listed (c.Listed). A
// sharded config stays grouped with none left: it then fetches nothing,
// never the api: form's organization. The api: form has no name to hash
// until the interface names it, so it is refused: list the organizations.
func (c *Config) TakeShard(s Shard) error {
	if s.IsZero() {
		return nil
	}
	if !c.Grouped() {
		return errors.New(s.Source + ": this config has the api: form, one organization with no name to shard by; " +
			"to run organizations in shards, list them under organizations: (each with its name and token_env or token_file; " +
			"see docs/operators.md \"Several organizations\"), or leave out --shard and " + ShardEnv)
	}
	c.Listed = len(c.Organizations)
	var taken []Organization
	for _, o := range c.Organizations {
		if s.Takes(o.Name) {
			taken = append(taken, o)
		}
	}
	c.Organizations, c.Shard = taken, s
	return nil
}

// ShardNames are the names of the organizations c takes.
func (c *Config) ShardNames() []string {
	names := make([]string, 0, len(c.Organizations))
	for _, o := range c.Organizations {
		names = append(names, o.Name)
	}
	return names
}
