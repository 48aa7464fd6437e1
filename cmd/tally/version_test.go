package main

import (
	"regexp"
	"testing"
)

// tally --version and tally version print the same: the version, the
// commit and the DuckDB library's version.
func TestVersion(t *testing.T) {
	long, err := execCLI(t, "", "version")
	if err != nil {
		t.Fatal(err)
	}
	flag, err := execCLI(t, "", "--version")
	if err != nil {
		t.Fatal(err)
	}
	if long != flag {
		t.Errorf("tally version printed\n%s\ntally --version printed\n%s", long, flag)
	}
	want := regexp.MustCompile(`^tally \S+\ncommit: \S+.*\nduckdb: v\d+\.\d+\.\d+ \(\w+\)\ngo: go\S+ \S+/\S+\n$`)
	if !want.MatchString(long) {
		t.Errorf("tally version printed\n%s\nwant version, commit, duckdb and go lines", long)
	}
}
