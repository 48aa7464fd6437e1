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
// They are written at every open, like the views, so they follow the files.
// A column a comment names that the database does not have (a later
// migration dropped it) is passed over.
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
	cols := map[[2]string]bool{}
	objs := map[string]bool{}
	rows, err := s.db.QueryContext(ctx, `SELECT table_name, column_name FROM duckdb_columns() WHERE database_name = current_database() AND schema_name = 'main'`)
	if err != nil {
		return fmt.Errorf("read columns: %w", err)
	}
	for rows.Next() {
		var t, c string
		if err := rows.Scan(&t, &c); err != nil {
			rows.Close()
			return fmt.Errorf("read columns: %w", err)
		}
		cols[[2]string{t, c}] = true
		objs[t] = true
	}
	if err := rows.Close(); err != nil {
		return fmt.Errorf("read columns: %w", err)
	}
	return s.inTx(ctx, func(conn *sql.Conn) error {
		for _, c := range all {
			var stmt string
			switch {
			case c.Column == "" && objs[c.Object]:
				stmt = fmt.Sprintf("COMMENT ON %s %s IS %s", c.Kind, quoteIdent(c.Object), quoteString(c.Text))
			case c.Column != "" && cols[[2]string{c.Object, c.Column}]:
				stmt = fmt.Sprintf("COMMENT ON COLUMN %s.%s IS %s", quoteIdent(c.Object), quoteIdent(c.Column), quoteString(c.Text))
			default:
				continue
			}
			if _, err := conn.ExecContext(ctx, stmt); err != nil {
				return fmt.Errorf("comment on %s %s: %w", c.Object, c.Column, err)
			}
		}
		return nil
	})
}
