package storetest

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/tally-dev/tally/store"
)

// Place puts at path the database store.Open would create there, as if a
// first run had just made it: the same bytes, made once per test binary.
// Making a store runs every migration, makes every view and writes every
// comment (about 0.6 s of CPU, 15 % of the ingest tests), and most tests
// only need one to exist; the store's own tests and the crash proofs of
// creation still make theirs.
func Place(t testing.TB, path string) {
	t.Helper()
	b, err := empty()
	if err != nil {
		t.Fatalf("make the template store: %v", err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// empty is a new store's file, made in a folder removed at once: a test
// binary leaves nothing behind.
var empty = sync.OnceValues(func() ([]byte, error) {
	dir, err := os.MkdirTemp("", "tally-storetest-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "tally.duckdb")
	s, err := store.Open(context.Background(), path)
	if err != nil {
		return nil, err
	}
	if err := s.Close(); err != nil {
		return nil, err
	}
	return os.ReadFile(path)
})
