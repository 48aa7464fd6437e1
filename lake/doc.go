// Package lake owns what tally and tally-lake share of Tally's Apache
// Iceberg tables (issue 41): the usage table's columns and field ids, its
// partitions (an organization's month), the keys of a Tally snapshot's
// summary, and the protocol by which tally asks tally-lake, the program
// that talks to the catalog, for a table's state and a commit.
//
// An export (export.CommitLake) commits, as one overwrite, exactly the
// partitions whose rows the loads changed since its last commit from the
// same database (store.UsageChanges), and nothing when none changed:
// tally writes each partition as a Parquet file with DuckDB, carrying the
// table's field ids, into the table's data folder (or, for a warehouse on
// S3, which DuckDB as tally links it cannot write to, into a local staging
// folder, and tally-lake uploads them: Request.Uploads), and tally-lake
// (lake/ice, cmd/tally-lake) swaps them in for the partitions' old files.
//
// The catalog side is a program of its own because Apache Iceberg's Go
// library would double the size of tally, which every command pays for at
// start (measured: 97 to 164 MB, tally --version 57 to 114 MB of memory
// and 0.09 to 0.22 s); only an export to the lake runs it. This package
// imports neither DuckDB nor Iceberg.
package lake
