// Package sql owns Tally's SQL text, embedded in the binary: schema
// migrations (schema/, numbered, applied in order), analyst views (views/)
// and the macros they call (macros/), one query per workbook sheet
// (reports/), named analyst queries (queries/) and what a close keeps of a
// month beside its figures (close/). Beyond giving the files out, it only
// orders the views by what they read (ViewOrder) and inlines the views a
// query reads into it (Inline).
package sql

import "embed"

// Schema holds the numbered migrations, NNNN_name.sql, applied in order.
//
//go:embed schema/*.sql
var Schema embed.FS

// Views holds the analyst views, created (or replaced) after migrations.
//
//go:embed views/*.sql
var Views embed.FS

// Macros holds DuckDB macros the views and queries call, one a file,
// created (or replaced) before the views, and defined anew on every
// connection the store opens (TEMP), so that a copy an older Tally
// published calls this Tally's.
//
//go:embed macros/*.sql
var Macros embed.FS

// Close holds month_close_keys.sql, the query whose rows the store keeps
// in month_close_keys for the closed months a condition picks.
//
//go:embed close/*.sql
var Close embed.FS

// Queries holds the named analyst queries of `tally query --name`.
//
//go:embed queries/*.sql
var Queries embed.FS

// Reports holds the queries behind the workbook's sheets, one file per
// sheet (the Summary has three; the Chargeback sheets' is package
// allocation's), named after the sheet they fill, and month_usage.sql,
// the report month's rows, which they all read, month_paid.sql, their
// value split by how it is paid, month_paid_by.sql, that split summed as
// the sheets of totals show it, month_rows.sql, which counts them, and
// statement_months.sql, a cost centre's months for its statement's chart.
// commitments.sql, the Commitments sheet's, reads the rows from each
// commitment's start instead, and is run by store.CommitmentDraws, for the
// commitment alert as well.
//
//go:embed reports/*.sql
var Reports embed.FS
