// Package prooftest holds what the proofs against real database files and
// workbooks share: reading usage back from a DuckDB file exactly, comparing
// it with the simulator's truth, and searching files for a leaked token.
// Tests of schedules and of the tally command use it.
//
// It lives under internal/testkit, the test-only helpers: only _test.go
// files import it, so it is compiled into test binaries and never into tally.
package prooftest
