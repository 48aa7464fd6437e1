package main

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// TestDemoPrintsWorkingQueries runs `tally demo --dir DIR` through the
// cobra root into a folder whose name has a space and a quote: it writes a database, the
// analysts' copy and a workbook, prints where, and prints three queries that
// each run as printed.
func TestDemoPrintsWorkingQueries(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "analyst's demo")
	out, code, stderr := cli(t, "demo", "--dir", dir, "--log-format", "json", "--log-level", "warn")
	if code != exitOK {
		t.Fatalf("demo: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, stderr)
	}
	for label, name := range map[string]string{
		"workbook:": "", "database:": "tally.duckdb", "analysts' copy:": "tally.published.duckdb",
	} {
		path := ""
		for _, l := range strings.Split(out, "\n") {
			if v, ok := strings.CutPrefix(strings.TrimSpace(l), label); ok {
				path = strings.TrimSpace(v)
			}
		}
		if path == "" || !strings.HasPrefix(path, dir+string(filepath.Separator)) || (name != "" && filepath.Base(path) != name) {
			t.Errorf("demo prints %s %q, want a file %s in %s", label, path, name, dir)
			continue
		}
		if fi, err := os.Stat(path); err != nil || fi.Size() == 0 {
			t.Errorf("%s %s: %v", label, path, err)
		}
		if label == "workbook:" && filepath.Ext(path) != ".xlsx" {
			t.Errorf("workbook %s is not an .xlsx", path)
		}
	}

	var queries [][]string
	for _, l := range strings.Split(out, "\n") {
		if cmd, ok := strings.CutPrefix(strings.TrimSpace(l), "go run ./cmd/tally "); ok {
			args, err := shellWords(cmd)
			if err != nil {
				t.Fatalf("printed command %q: %v", cmd, err)
			}
			queries = append(queries, args)
		}
	}
	if len(queries) != 3 {
		t.Fatalf("demo printed %d commands, want three queries:\n%s", len(queries), out)
	}
	for _, args := range queries {
		if args[0] != "query" {
			t.Errorf("printed command %q is not a query", args)
			continue
		}
		// The usage table holds every granularity and basis loaded: a sum
		// straight over it counts a charge more than once.
		if sql := strings.Join(args, " "); rawUsageSum.MatchString(sql) {
			t.Errorf("suggested query %q sums the usage table itself; read usage_finest or a view", sql)
		}
		got, code, stderr := cli(t, args...)
		lines := strings.Split(strings.TrimSpace(got), "\n")
		if code != exitOK || len(lines) < 3 {
			t.Errorf("%q: exit %d, %d lines\nstdout:\n%s\nstderr:\n%s", args, code, len(lines), got, stderr)
		}
	}
}

var rawUsageSum = regexp.MustCompile(`(?i)sum\(.*\bFROM\s+usage(\s|$)`)

// shellWords splits a command line the way a POSIX shell would for words,
// single quotes, double quotes and backslashes (no expansions).
func shellWords(s string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return nil, errUnclosed
			}
			cur.WriteString(s[i+1 : i+1+j])
			i += j + 1
			inWord = true
		case c == '"':
			i++
			for ; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' && i+1 < len(s) && strings.IndexByte("\"\\$`", s[i+1]) >= 0 {
					i++
				}
				cur.WriteByte(s[i])
			}
			if i >= len(s) {
				return nil, errUnclosed
			}
			inWord = true
		case c == '\\' && i+1 < len(s):
			i++
			cur.WriteByte(s[i])
			inWord = true
		case unicode.IsSpace(rune(c)):
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, nil
}

var errUnclosed = errors.New("unclosed quote")
