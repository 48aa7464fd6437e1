// Package storetest builds a store for a capability's tests through the
// store's own API and reads it back: a store in a temp folder, usage rows
// loaded as a fetch loads them, query results as text. The allocation and
// export tests share it; the store's own tests cannot (a package's
// internal tests may not import what imports it), and keep theirs.
//
// It lives under internal/testkit, the test-only helpers: only _test.go
// files import it, so it is compiled into test binaries and never into tally.
package storetest
