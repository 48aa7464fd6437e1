package store

import (
	"context"
	"database/sql"
	"fmt"
	"io/fs"

	tallysql "github.com/tally-dev/tally/sql"
)

// comment writes the descriptions the SQL files carry into DuckDB's
// catalog (COMMENT ON), so the DuckDB CLI, DBeaver and Python show what
// each table, view and column holds; the published copy carries them too.
// They are checked whenever an open makes the views (makeViews), so they
// follow the files; only those the catalog does not already hold are
// written (rewriting them all took about half of every open). A column a comment names that the
// database does not have (a later migration dropped it) is passed over.
func (s *Store) comment(ctx context.Context, fsyss ...fs.FS) error {
	var all []tallysql.Comment
	for _, fsys := range fsyss {
		names, err := fs.Glob(fsys, "*.sql")
		if err != nil {
			return err
		}
		for _, n := range names {
			b, err := fs.ReadFile(fsys, n)
			if err != nil {
				return err
			}
			all = append(all, tallysql.Comments(string(b))...)
		}
	}
	all = append(all, machineryComments()...)
	// What the catalog holds: every column of main with its comment, and
	// every table's and view's; "" where there is none.
	cols := map[[2]string]string{}
	objs := map[string]string{}
	rows, err := s.db.QueryContext(ctx, `SELECT table_name, column_name, coalesce(comment, '') FROM duckdb_columns() WHERE database_name = current_database() AND schema_name = 'main'
UNION ALL SELECT table_name, NULL, coalesce(comment, '') FROM duckdb_tables() WHERE database_name = current_database() AND schema_name = 'main'
UNION ALL SELECT view_name, NULL, coalesce(comment, '') FROM duckdb_views() WHERE database_name = current_database() AND schema_name = 'main'`)
	if err != nil {
		return fmt.Errorf("read columns: %w", err)
	}
	for rows.Next() {
		var t, text string
		var c sql.NullString
		if err := rows.Scan(&t, &c, &text); err != nil {
			rows.Close()
			return fmt.Errorf("read columns: %w", err)
		}
		if c.Valid {
			cols[[2]string{t, c.String}] = text
		} else {
			objs[t] = text
		}
	}
	if err := rows.Close(); err != nil {
		return fmt.Errorf("read columns: %w", err)
	}
	type write struct {
		c    tallysql.Comment
		stmt string
	}
	// One object or column the files describe more than once (a later
	// migration adds a column again, with its own words) takes the last
	// description: written in turn, each open would write both and leave
	// them alternating.
	last := map[[2]string]int{}
	for i, c := range all {
		last[[2]string{c.Object, c.Column}] = i
	}
	var writes []write
	for i, c := range all {
		if last[[2]string{c.Object, c.Column}] != i {
			continue
		}
		if c.Column == "" {
			if have, ok := objs[c.Object]; ok && have != c.Text {
				writes = append(writes, write{c, fmt.Sprintf("COMMENT ON %s %s IS %s", c.Kind, quoteIdent(c.Object), quoteString(c.Text))})
			}
		} else if have, ok := cols[[2]string{c.Object, c.Column}]; ok && have != c.Text {
			writes = append(writes, write{c, fmt.Sprintf("COMMENT ON COLUMN %s.%s IS %s", quoteIdent(c.Object), quoteIdent(c.Column), quoteString(c.Text))})
		}
	}
	if len(writes) == 0 {
		return nil
	}
	return s.inTx(ctx, func(conn *sql.Conn) error {
		for _, w := range writes {
			if _, err := conn.ExecContext(ctx, w.stmt); err != nil {
				return fmt.Errorf("comment on %s %s: %w", w.c.Object, w.c.Column, err)
			}
		}
		return nil
	})
}
