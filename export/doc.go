// Package export owns Tally's exports: the usage table and the reference
// snapshots as Parquet, and the usage as FinOps FOCUS rows (1.3 by
// default: Cost and Usage, Contract Commitment and the FOCUS metadata; or
// 1.2, the focus view's rows), each dataset Hive-partitioned by month,
// optionally also as CSV with a spreadsheet formula guard. It owns the
// export folder's layout: the manifest of each month's fingerprint (a
// rerun writes only the months whose data changed), the staging folder and
// atomic renames, and the folder's lock. Its SQL is in sql/ (the FOCUS 1.3
// mapping over the focus view of the top-level sql/views).
//
// Write exports a store; Run is the export of a job or of tally export,
// the config's export section over the command's options. Format iceberg
// is handed to package lake, with the lake's catalog and warehouse as the
// config and the export folder give them (LakeConfig).
package export
