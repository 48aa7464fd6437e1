// Package lake owns Tally's Apache Iceberg tables (issue 41): the catalog
// they are registered in (for now an embedded SQLite catalog, sqlite:PATH,
// beside a local warehouse folder), the tables' schemas and partition
// specs, and committing to them. The usage table is written one
// (organization, month) partition at a time: an export commits an
// overwrite of exactly the partitions whose rows the loads changed since
// its last commit (store.UsageChanges), and nothing when none changed.
// Commits that lose a race to another writer are retried by reloading the
// table and redoing the change, a bounded number of times.
//
// The FOCUS tables, other catalogs (PostgreSQL, REST) and S3 storage are
// not here yet.
package lake
