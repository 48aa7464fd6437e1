package ingest_test

import (
	"errors"
	"os"
	"testing"

	"github.com/tally-dev/tally/internal/testkit/prooftest"
	"github.com/tally-dev/tally/internal/testkit/runtest"
)

// TestCrashWhileCreatingTheDatabase: a run killed while the database was
// being created leaves a temporary file beside its name, never an empty
// or half-made file under it; the next run creates the database and
// removes the leftover.
func TestCrashWhileCreatingTheDatabase(t *testing.T) {
	e := runtest.ProofStart(t, runtest.ProofSetup{NoStore: true})
	leftover := e.DB + ".creating-0123456789abcdef"
	if err := os.WriteFile(leftover, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	e.MustFetch()
	prooftest.Exact(t, e.Sim, e.DB, e.Span())
	if _, err := os.Stat(leftover); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the leftover of the killed creation is still there: %v", err)
	}
}
