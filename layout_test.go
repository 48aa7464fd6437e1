package tally

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

const modulePath = "github.com/tally-dev/tally"

// layoutRule is one row of docs/development.md "Code layout": the folders
// it covers and the folders of this module their code may import.
type layoutRule struct {
	folders  []string // "." for the root; "x/..." for x and every folder below
	may      []string // likewise; nil with any set: everything
	any      bool
	testOnly bool // only _test.go files may import these folders
}

var backtickRE = regexp.MustCompile("`([^`]+)`")

// covers reports whether pattern ("x", "x/...", ".") covers folder.
func covers(pattern, folder string) bool {
	if base, ok := strings.CutSuffix(pattern, "/..."); ok {
		return folder == base || strings.HasPrefix(folder, base+"/")
	}
	return pattern == folder
}

// layoutRules reads the table of docs/development.md "Code layout".
func layoutRules(t *testing.T) []layoutRule {
	t.Helper()
	b, err := os.ReadFile("docs/development.md")
	if err != nil {
		t.Fatal(err)
	}
	_, sec, ok := strings.Cut(string(b), "\n## Code layout\n")
	if !ok {
		t.Fatal(`docs/development.md has no "## Code layout" section`)
	}
	if i := strings.Index(sec, "\n## "); i >= 0 {
		sec = sec[:i]
	}
	var rules []layoutRule
	for _, line := range strings.Split(sec, "\n") {
		cells := strings.Split(strings.Trim(strings.TrimSpace(line), "|"), "|")
		if len(cells) != 3 || strings.Contains(cells[0], "---") || strings.TrimSpace(cells[0]) == "folder" {
			continue
		}
		var r layoutRule
		for _, m := range backtickRE.FindAllStringSubmatch(cells[0], -1) {
			if f := m[1]; f == "." || isDir(strings.TrimSuffix(f, "/...")) {
				r.folders = append(r.folders, f)
			}
		}
		may := cells[2]
		r.any = strings.Contains(may, "anything")
		r.testOnly = strings.Contains(may, "test files only")
		for _, m := range backtickRE.FindAllStringSubmatch(may, -1) {
			r.may = append(r.may, m[1])
		}
		if len(r.folders) == 0 {
			t.Fatalf("docs/development.md Code layout: row %q names no folder of the module", line)
		}
		rules = append(rules, r)
	}
	if len(rules) == 0 {
		t.Fatal("docs/development.md Code layout: no rows with three columns (folder | owns | may import)")
	}
	return rules
}

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

// TestCodeLayout holds the code to the table of docs/development.md "Code
// layout": every package of the module has a row, its code imports only
// the folders its row allows, and the test-only helpers are imported by
// _test.go files alone. The table is the one statement of which package
// may import which; this test is what keeps it true.
func TestCodeLayout(t *testing.T) {
	rules := layoutRules(t)
	ruleOf := func(folder string) *layoutRule {
		var best *layoutRule
		bestLen := -1
		for i := range rules {
			for _, f := range rules[i].folders {
				if covers(f, folder) && len(f) > bestLen {
					best, bestLen = &rules[i], len(f)
				}
			}
		}
		return best
	}
	// Every folder with Go code, and what its files import.
	type use struct{ file, imp string }
	uses := map[string][]use{}
	err := filepath.WalkDir(".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); p != "." && (strings.HasPrefix(name, ".") || name == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), p, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		dir := filepath.ToSlash(filepath.Dir(p))
		if _, ok := uses[dir]; !ok {
			uses[dir] = nil
		}
		for _, is := range f.Imports {
			imp, _ := strconv.Unquote(is.Path.Value)
			if imp == modulePath {
				imp = "."
			} else if rest, ok := strings.CutPrefix(imp, modulePath+"/"); ok {
				imp = rest
			} else {
				continue // the standard library and other modules
			}
			uses[dir] = append(uses[dir], use{filepath.ToSlash(p), imp})
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	dirs := make([]string, 0, len(uses))
	for d := range uses {
		dirs = append(dirs, d)
	}
	sort.Strings(dirs)
	for _, dir := range dirs {
		r := ruleOf(dir)
		if r == nil {
			t.Errorf("folder %s has Go code but no row in docs/development.md Code layout: add one saying what it owns and what it may import", dir)
			continue
		}
		for _, u := range uses[dir] {
			test := strings.HasSuffix(u.file, "_test.go")
			target := ruleOf(u.imp)
			if target != nil && target.testOnly && !test {
				t.Errorf("%s imports %s, a test-only helper: only _test.go files may", u.file, u.imp)
			}
			if test || r.any || u.imp == dir {
				continue
			}
			allowed := false
			for _, m := range r.may {
				if covers(m, u.imp) {
					allowed = true
					break
				}
			}
			if !allowed {
				t.Errorf("%s imports %s, which docs/development.md Code layout does not allow %s to import (it may import %s)",
					u.file, u.imp, path.Clean(dir), strings.Join(r.may, ", "))
			}
		}
	}
}
