package main

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// A fixture is a folder of files (a config, a database and its published
// copy) that several tests start from. Creating a store runs every
// migration and makes every view, about a second of CPU, so each fixture
// is made once per test binary and each test gets a copy of its files:
// the same bytes a fresh making would leave, in a folder of its own.
type fixture struct {
	entries []fixtureEntry // parents before what they hold
}

type fixtureEntry struct {
	path string // slash-separated, under the folder
	mode fs.FileMode
	data []byte // nil for a folder
}

// onceFixture makes the fixture with build, into an empty folder, the
// first time it is asked for, reads back what build left there and removes
// the folder.
func onceFixture(build func(dir string) error) func() (fixture, error) {
	return sync.OnceValues(func() (fixture, error) {
		dir, err := os.MkdirTemp("", "tally-cli-fixture-")
		if err != nil {
			return fixture{}, err
		}
		defer os.RemoveAll(dir)
		if err := build(dir); err != nil {
			return fixture{}, err
		}
		var f fixture
		err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil || path == dir {
				return err
			}
			rel, err := filepath.Rel(dir, path)
			if err != nil {
				return err
			}
			info, err := d.Info()
			if err != nil {
				return err
			}
			e := fixtureEntry{path: filepath.ToSlash(rel), mode: info.Mode()}
			if !d.IsDir() {
				if !info.Mode().IsRegular() {
					return fmt.Errorf("%s: a fixture holds files and folders only", rel)
				}
				if e.data, err = os.ReadFile(path); err != nil {
					return err
				}
			}
			f.entries = append(f.entries, e)
			return nil
		})
		return f, err
	})
}

// placeFixture writes a copy of the fixture's files into a new temp folder
// of the test and returns the folder.
func placeFixture(t *testing.T, made func() (fixture, error)) string {
	t.Helper()
	f, err := made()
	if err != nil {
		t.Fatalf("making the fixture: %v", err)
	}
	dir := t.TempDir()
	for _, e := range f.entries {
		path := filepath.Join(dir, filepath.FromSlash(e.path))
		var err error
		if e.mode.IsDir() {
			err = os.Mkdir(path, e.mode.Perm())
		} else {
			err = os.WriteFile(path, e.data, e.mode.Perm())
		}
		if err == nil {
			err = os.Chmod(path, e.mode.Perm()) // past the umask, as made
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// atBinaryEnd holds what must be undone once every test ran (TestMain
// calls endBinary): folders and servers that several tests read.
var atBinaryEnd struct {
	sync.Mutex
	fns []func()
}

func onBinaryEnd(fn func()) {
	atBinaryEnd.Lock()
	defer atBinaryEnd.Unlock()
	atBinaryEnd.fns = append(atBinaryEnd.fns, fn)
}

func endBinary() {
	atBinaryEnd.Lock()
	defer atBinaryEnd.Unlock()
	for _, fn := range atBinaryEnd.fns {
		fn()
	}
}

// sharedDir is a folder that lives as long as the test binary, for a run
// several tests read.
func sharedDir(pattern string) (string, error) {
	dir, err := os.MkdirTemp("", pattern)
	if err != nil {
		return "", err
	}
	onBinaryEnd(func() { os.RemoveAll(dir) })
	return dir, nil
}
