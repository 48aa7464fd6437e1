// Package ice is the Apache Iceberg side of Tally's lake, linked only into
// the tally-lake program (cmd/tally-lake): the catalog the tables are
// registered in (an embedded SQLite catalog, sqlite:PATH, or a PostgreSQL
// database several machines share), the warehouse its files go under (a
// local folder, or s3://BUCKET[/PREFIX] through iceberg-go's S3 IO, which
// only this package links), the tables' schemas and partition specs from
// lake.UsageColumns, and commits that swap the Parquet files tally wrote
// in for whole partitions, first copying them to S3 when the warehouse is
// there. A commit that loses a race to another writer is redone on the
// reloaded table, a bounded number of times.
//
// The FOCUS tables and a REST catalog are not here yet.
package ice
