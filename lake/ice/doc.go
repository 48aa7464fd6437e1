// Package ice is the Apache Iceberg side of Tally's lake, linked only into
// the tally-lake program (cmd/tally-lake): the catalog the tables are
// registered in (an embedded SQLite catalog, sqlite:PATH, beside a local
// warehouse folder), the tables' schemas and partition specs from
// lake.UsageColumns, and commits that swap the Parquet files tally wrote
// in for whole partitions. A commit that loses a race to another writer
// is redone on the reloaded table, a bounded number of times.
//
// The FOCUS tables, other catalogs (PostgreSQL, REST) and S3 storage are
// not here yet.
package ice
