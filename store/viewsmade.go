package store

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"fmt"
	"hash"
	"io/fs"
	"strings"

	tallysql "github.com/tally-dev/tally/sql"
)

// Every writer's open used to remake every view and macro and compare
// every comment with its SQL: a few hundred milliseconds of CPU, and a
// catalog rewrite the close then checkpointed, on each of the many opens
// a run (and a test suite) makes, almost all of which change nothing. An
// open now remakes them only when what they are made from differs from
// what it was when they were last made, as views_made records it: the
// SQL of the migrations, views and macros (a new Tally, or a test's own
// views, differs), the catalog (every table's, view's and column's name,
// type, definition and comment, so whatever a migration or anyone else
// changed differs), and DuckDB's version. Migration machinery like
// kept_refills, so made beside schema_migrations.
const createViewsMadeTable = `CREATE TABLE IF NOT EXISTS views_made (
    fingerprint VARCHAR NOT NULL
)`

var viewsMadeComments = []tallysql.Comment{
	{Kind: "TABLE", Object: "views_made", Text: "What the views, macros and comments Tally last made in this database were made from, as a fingerprint: an open makes them again only when it differs"},
	{Kind: "TABLE", Object: "views_made", Column: "fingerprint", Text: "the SHA-256, in hex, of the SQL they were made from, of the catalog once made (every table, view and column with its type and comment) and of the DuckDB version"},
}

// machineryComments describe the tables made beside schema_migrations;
// comment writes them with those the SQL files carry.
func machineryComments() []tallysql.Comment {
	return append(append([]tallysql.Comment(nil), refillsComments...), viewsMadeComments...)
}

// makeViews (re)creates the views and writes the comments the catalog
// does not hold as the SQL says (createViews, comment), unless views_made
// says they were made from what they would be made from now.
func (s *Store) makeViews(ctx context.Context, o options) error {
	now, err := s.viewsFingerprint(ctx, o)
	if err != nil {
		return err
	}
	var made string
	switch err := ScanOne(ctx, s.db, `SELECT fingerprint FROM views_made`, nil, &made); {
	case err == sql.ErrNoRows:
	case err != nil:
		return fmt.Errorf("read views_made: %w", err)
	case made == now:
		return nil
	}
	if err := s.createViews(ctx, o.views); err != nil {
		return err
	}
	if err := s.comment(ctx, o.migrations, o.views); err != nil {
		return err
	}
	// Of the catalog as made: the next open compares with that.
	if now, err = s.viewsFingerprint(ctx, o); err != nil {
		return err
	}
	return s.inTx(ctx, func(conn *sql.Conn) error {
		if _, err := conn.ExecContext(ctx, `DELETE FROM views_made`); err != nil {
			return fmt.Errorf("record views_made: %w", err)
		}
		if _, err := conn.ExecContext(ctx, `INSERT INTO views_made VALUES (?)`, now); err != nil {
			return fmt.Errorf("record views_made: %w", err)
		}
		return nil
	})
}

// viewsFingerprint is what the views, macros and comments of the database
// would be made from now (see views_made).
func (s *Store) viewsFingerprint(ctx context.Context, o options) (string, error) {
	h := sha256.New()
	var version string
	if err := ScanOne(ctx, s.db, `SELECT version()`, nil, &version); err != nil {
		return "", fmt.Errorf("read the DuckDB version: %w", err)
	}
	field(h, "duckdb", version)
	for _, fsys := range []fs.FS{o.migrations, o.views, tallysql.Macros} {
		if err := fs.WalkDir(fsys, ".", func(name string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(name, ".sql") {
				return err
			}
			b, err := fs.ReadFile(fsys, name)
			if err != nil {
				return err
			}
			field(h, name, string(b))
			return nil
		}); err != nil {
			return "", fmt.Errorf("read the SQL: %w", err)
		}
	}
	for _, k := range keptViews {
		field(h, k.view, k.table, k.query)
	}
	for _, c := range machineryComments() {
		field(h, c.Kind, c.Object, c.Column, c.Text)
	}
	// Not the views' own text in the catalog (duckdb_views().sql): DuckDB
	// writes it anew at each load, not always alike (EXCLUDE lists change
	// order), so the same views would seem to change. What they are made
	// from, above, and the columns they bind to, here, say it.
	rows, err := s.db.QueryContext(ctx, `SELECT 'column', table_name, column_name, CAST(column_index AS VARCHAR), data_type, coalesce(comment, '')
FROM duckdb_columns() WHERE database_name = current_database() AND schema_name = 'main'
UNION ALL SELECT 'table', table_name, '', '', '', coalesce(comment, '')
FROM duckdb_tables() WHERE database_name = current_database() AND schema_name = 'main'
UNION ALL SELECT 'view', view_name, '', '', '', coalesce(comment, '')
FROM duckdb_views() WHERE database_name = current_database() AND schema_name = 'main' AND NOT internal
ORDER BY ALL`)
	if err != nil {
		return "", fmt.Errorf("read the catalog: %w", err)
	}
	defer rows.Close()
	var f [6]string
	for rows.Next() {
		if err := rows.Scan(&f[0], &f[1], &f[2], &f[3], &f[4], &f[5]); err != nil {
			return "", fmt.Errorf("read the catalog: %w", err)
		}
		field(h, f[:]...)
	}
	if err := rows.Close(); err != nil {
		return "", fmt.Errorf("read the catalog: %w", err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// field writes parts to h each with its length, so that no two lists of
// parts write the same bytes.
func field(h hash.Hash, parts ...string) {
	for _, p := range parts {
		fmt.Fprintf(h, "%d:%s", len(p), p)
	}
}
