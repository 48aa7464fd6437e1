// Package runtest is the end-to-end harness of the capability packages'
// tests, imported only by _test.go files: a simulated interface (fetch/sim)
// behind an httptest server or a fault injector, a config in a temp folder,
// a schedules.Runner on it with a clock the test moves and retries that
// never really wait, and the checks that what a run loaded equals the
// simulator's truth and that the token never lands in a log or a file.
// Harness is the end-to-end tests'; ProofEnv the reliability and security
// proofs', which record every retry wait. RunFetch runs ingest's step as
// `tally fetch` does, RunNightly the fetch and report steps as `tally run`
// does; Published opens the analysts' copy as `tally export` does, for a
// test's export.Run (runtest imports no export, so export's own tests may
// use it). The package schedules' tests that run on it are external
// (package schedules_test), since runtest imports schedules.
package runtest
