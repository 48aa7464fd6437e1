// Package laketest builds the tally-lake program for the tests that
// export to the lake: once per test binary, as scripts/build would, from
// this module's source.
package laketest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/tally-dev/tally/lake"
)

var (
	once  sync.Once
	dir   string
	built error
)

// Helper is the path of a tally-lake built from this module; the test
// fails when it cannot be built.
func Helper(t testing.TB) string {
	t.Helper()
	once.Do(func() {
		var root []byte
		if root, built = exec.Command("go", "env", "GOMOD").Output(); built != nil {
			return
		}
		if dir, built = os.MkdirTemp("", "tally-lake-"); built != nil {
			return
		}
		cmd := exec.Command("go", "build", "-o", filepath.Join(dir, lake.HelperName), "./cmd/tally-lake")
		cmd.Dir = filepath.Dir(strings.TrimSpace(string(root)))
		if out, err := cmd.CombinedOutput(); err != nil {
			built = &buildError{err: err, out: string(out)}
		}
	})
	if built != nil {
		t.Fatalf("build tally-lake: %v", built)
	}
	return filepath.Join(dir, lake.HelperName)
}

// OnPath puts the built tally-lake on PATH for the test, where tally
// finds it.
func OnPath(t *testing.T) string {
	t.Helper()
	p := Helper(t)
	t.Setenv("PATH", filepath.Dir(p)+string(os.PathListSeparator)+os.Getenv("PATH"))
	return p
}

// Remove deletes the built program: a TestMain calls it once the tests
// ran.
func Remove() {
	if dir != "" {
		os.RemoveAll(dir)
	}
}

type buildError struct {
	err error
	out string
}

func (e *buildError) Error() string { return e.err.Error() + "\n" + e.out }
