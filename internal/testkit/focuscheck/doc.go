// Package focuscheck checks FinOps FOCUS 1.2 and 1.3 datasets, as DuckDB reads them,
// against the specification's normative (MUST) rules that apply to a usage
// feed whose sub-accounts are projects, whose price list is a rate card and
// whose commitment discounts are entitlements: the columns present with
// their types, nullability, allowed values, ISO 4217 currencies,
// non-negative prices and quantities, the conditional rules between
// columns, and one SkuId per SkuPriceId across rows. Tally's tests run it
// over every FOCUS export they make, and count an export's rows of a
// closed month with it (Export).
//
// It lives under internal/testkit, the test-only helpers: only _test.go
// files import it, so it is compiled into test binaries and never into tally.
package focuscheck
