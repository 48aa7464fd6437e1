// Package store owns Tally's DuckDB file: opening it and applying the
// migrations of sql/schema, loading usage windows (one transaction a
// window, streamed through DuckDB's appender), the ledger of loaded
// windows, the (organization, month) partitions each load changed
// (usage_changes, which the Iceberg export commits), run records, dated reference snapshots, the read-only copy
// published for analysts, the one-writer lock beside the database, and
// read-only querying for `tally query` and `tally status`, and the figures
// two capabilities read alike, such as what each configured commitment
// drew (CommitmentDraws: the workbook's Commitments sheet and the
// commitment alert).
//
// Money is DECIMAL(38,12) in the database and fetch.Decimal in Go; it never
// passes through a float.
//
// DuckDB allows one read-write process or many read-only ones on a file,
// never both. The nightly writer therefore holds the database and, after
// each run, publishes a copy that analysts open read-only; an analyst's
// session never blocks the writer.
package store
