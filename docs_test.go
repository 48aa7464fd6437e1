package tally

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// linkRE finds a Markdown link's target; headingRE a heading.
var (
	linkRE    = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	headingRE = regexp.MustCompile(`(?m)^#{1,6} (.+)$`)
	fenceRE   = regexp.MustCompile("(?s)```.*?```")
	schemeRE  = regexp.MustCompile(`^[a-z]+:`) // https:, mailto:: not checked here
)

// slug is GitHub's anchor for a heading: lower case, punctuation dropped
// (hyphens and underscores kept), spaces as hyphens.
func slug(h string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(h)) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// anchors are the anchors of a Markdown file's headings, the second and
// later of one name numbered as GitHub numbers them.
func anchors(text string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	for _, m := range headingRE.FindAllStringSubmatch(fenceRE.ReplaceAllString(text, ""), -1) {
		s := slug(m[1])
		if n := seen[s]; n > 0 {
			out[s+"-"+strconv.Itoa(n)] = true
		} else {
			out[s] = true
		}
		seen[s]++
	}
	return out
}

// Every relative link in README.md and docs/ leads somewhere: its file
// exists, and its anchor names a heading of that file. The docs are split
// by reader, so a moved section must not leave a link behind it.
func TestDocsLinks(t *testing.T) {
	files, err := filepath.Glob("docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	files = append([]string{"README.md"}, files...)
	if len(files) < 5 {
		t.Fatalf("docs: %v", files)
	}
	texts := map[string]string{}
	read := func(p string) (string, bool) {
		p = filepath.Clean(p)
		if s, ok := texts[p]; ok {
			return s, true
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return "", false
		}
		texts[p] = string(b)
		return string(b), true
	}
	links := 0
	for _, f := range files {
		text, _ := read(f)
		for _, m := range linkRE.FindAllStringSubmatch(fenceRE.ReplaceAllString(text, ""), -1) {
			target := m[1]
			if schemeRE.MatchString(target) {
				continue
			}
			links++
			path, anchor, _ := strings.Cut(target, "#")
			dest := f
			if path != "" {
				dest = filepath.Join(filepath.Dir(f), path)
				if _, err := os.Stat(dest); err != nil {
					t.Errorf("%s: link %s: %v", f, target, err)
					continue
				}
			}
			if anchor == "" {
				continue
			}
			body, ok := read(dest)
			if !ok || !strings.HasSuffix(dest, ".md") {
				t.Errorf("%s: link %s: an anchor into %s, which is not a Markdown file", f, target, dest)
				continue
			}
			if !anchors(body)[anchor] {
				t.Errorf("%s: link %s: %s has no heading #%s", f, target, dest, anchor)
			}
		}
	}
	if links < 30 {
		t.Fatalf("%d relative links found: the checker reads too little", links)
	}
	// The README is the front door: short, and pointing at every doc.
	readme, _ := read("README.md")
	if n := strings.Count(readme, "\n"); n > 260 {
		t.Errorf("README.md has %d lines: keep it a front door (about 250 at most); move detail to docs/", n)
	}
	for _, f := range files[1:] {
		if !strings.Contains(readme, "("+filepath.ToSlash(f)) {
			t.Errorf("README.md does not link %s", f)
		}
	}
}
