// Package sql owns Tally's SQL text, embedded in the binary: schema
// migrations (schema/, numbered, applied in order), analyst views (views/),
// one query per workbook sheet (reports/) and named analyst queries
// (queries/). Beyond giving the files out, it only orders the views by
// what they read (ViewOrder) and inlines the views a query reads into it
// (Inline).
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

// Queries holds the named analyst queries of `tally query --name`.
//
//go:embed queries/*.sql
var Queries embed.FS

// Reports holds the queries behind the workbook's sheets, one file per
// sheet (the Summary has three), named after the sheet they fill, and
// month_usage.sql, the report month's rows, which they all read, and
// month_rows.sql, which counts them.
//
//go:embed reports/*.sql
var Reports embed.FS
