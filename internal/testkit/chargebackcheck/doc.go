// Package chargebackcheck splits usage rows by chargeback rules the way the
// docs state them, independently of Tally's SQL: the tests compare the
// views, the workbook and the statements with it.
//
// It lives under internal/testkit, the test-only helpers: only _test.go
// files import it, so it is compiled into test binaries and never into tally.
package chargebackcheck
