// Package storetest builds a store for a capability's tests through the
// store's own API and reads it back: a store in a temp folder, usage rows
// loaded as a fetch loads them, query results as text, and the load
// benchmarks' rows. The allocation and export tests share it, and the
// store's load benchmark (an external test); the store's internal tests
// cannot (a package's internal tests may not import what imports it), and
// keep their own.
//
// It lives under internal/testkit, the test-only helpers: only _test.go
// files import it, so it is compiled into test binaries and never into tally.
package storetest
