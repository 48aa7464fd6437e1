package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// README's Commands block is what users copy: each of its lines is the
// command's own usage line (its --help), word for word, and every flag a
// command takes is in it, so neither can drift from the other; the
// operators' guide shows the same block.
func TestUsageLinesMatchREADME(t *testing.T) {
	text, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(text), "\n## Commands\n\n```\n")
	if !ok {
		t.Fatal("README.md has no Commands block")
	}
	block, _, _ := strings.Cut(after, "```")
	ops, err := os.ReadFile(filepath.Join("..", "..", "docs", "operators.md"))
	if err != nil {
		t.Fatal(err)
	}
	if _, opsAfter, ok := strings.Cut(string(ops), "\n## Use\n\n```\n"); !ok {
		t.Error("docs/operators.md has no Use block")
	} else if opsBlock, _, _ := strings.Cut(opsAfter, "```"); opsBlock != block {
		t.Errorf("docs/operators.md's Use block is not README's Commands block:\n%s\nREADME:\n%s", opsBlock, block)
	}
	readme := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(block), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 || f[0] != "tally" {
			t.Fatalf("README Commands line %q does not start with tally and a command", line)
		}
		readme[f[1]] = strings.Join(f[1:], " ")
	}
	var started bool
	root := newRootCmd(&started)
	seen := 0
	for _, c := range root.Commands() {
		if c.Hidden || c.Name() == "help" || c.Name() == "completion" {
			continue
		}
		seen++
		use := strings.Join(strings.Fields(c.Use), " ")
		got, ok := readme[c.Name()]
		if !ok {
			t.Errorf("README Commands has no line for tally %s (its usage: %s)", c.Name(), use)
			continue
		}
		if got != use {
			t.Errorf("tally %s: README says\n  %s\nits --help says\n  %s", c.Name(), got, use)
		}
		c.LocalNonPersistentFlags().VisitAll(func(f *pflag.Flag) {
			if f.Hidden || f.Name == "help" {
				return
			}
			shown := regexp.MustCompile(`(^|[\[( |])--` + regexp.QuoteMeta(f.Name) + `\b`).MatchString(use)
			if f.Shorthand != "" {
				shown = shown || regexp.MustCompile(`(^|[\[( |])-`+regexp.QuoteMeta(f.Shorthand)+`\b`).MatchString(use)
			}
			if !shown {
				t.Errorf("tally %s takes --%s, which its usage line does not show: %s", c.Name(), f.Name, use)
			}
		})
		delete(readme, c.Name())
	}
	for name, line := range readme {
		t.Errorf("README Commands lists tally %s, which is no command: %s", name, line)
	}
	if seen < 10 {
		t.Fatalf("found %d commands; the tree was not built", seen)
	}
}
