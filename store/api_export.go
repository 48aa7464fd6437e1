package store

import (
	"context"
	"database/sql"
	"os"
)

// What the export package (export/) needs of the store's internals, kept
// in one file so that the store's surface for it is seen at a glance.

// KeptDefs are the kept views whose table the database on q has, each to
// its query (for tallysql.InlineDefined): the export reads the meters of
// every month from the tables the load keeps rather than from every usage
// row of the history.
func KeptDefs(ctx context.Context, q Querier) (map[string]string, error) {
	return keptDefs(ctx, q)
}

// Copying readies the database for an export's COPY, and returns what
// undoes it. A partitioned COPY keeps a file's writer per month and thread
// (some 25 to 50 MB each for FOCUS 1.3's eighty-odd columns): on two
// threads, three months of a few thousand rows ran out of the writer's
// 160 MB. So on the writer a COPY runs on one thread, as loads do, at the
// writer's memory limit; a reader has a quarter of the machine
// (ReadOnly) and keeps its threads.
func (s *Store) Copying(ctx context.Context) (func(), error) {
	if s.readOnly {
		return func() {}, nil
	}
	return s.oneThread(ctx)
}

// Rollback undoes the open transaction on conn, even when the context that
// failed it is cancelled, and returns cause.
func Rollback(conn *sql.Conn, cause error) error { return rollback(conn, cause) }

// QuoteString is s as a SQL string literal.
func QuoteString(s string) string { return quoteString(s) }

// QuoteIdent is s as a SQL identifier.
func QuoteIdent(s string) string { return quoteIdent(s) }

// GlobEscape escapes the characters filepath.Match treats specially.
func GlobEscape(s string) string { return globEscape(s) }

// SyncDir makes renames into dir durable; a failure only weakens that.
func SyncDir(dir string) { syncDir(dir) }

// syncDir makes renames into dir durable; a failure only weakens that.
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
}
