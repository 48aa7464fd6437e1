package store

import (
	"context"
	"path/filepath"
	"testing"
)

// Every table and view an analyst reads describes itself in DuckDB's
// catalog, and so does every column of the tables, from the comments in
// the SQL files; the published copy carries them.
func TestCatalogComments(t *testing.T) {
	ctx := context.Background()
	st, err := Open(ctx, filepath.Join(t.TempDir(), "tally.duckdb"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	pub, err := st.Publish(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ro, err := Open(ctx, pub, ReadOnly())
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	missing := func(q string) []string {
		t.Helper()
		rows, err := ro.DB().QueryContext(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var out []string
		for rows.Next() {
			var s string
			if err := rows.Scan(&s); err != nil {
				t.Fatal(err)
			}
			out = append(out, s)
		}
		return out
	}
	if m := missing(`SELECT table_name FROM duckdb_tables() WHERE NOT internal AND table_name <> 'schema_migrations' AND coalesce(comment, '') = ''`); len(m) > 0 {
		t.Errorf("tables without a comment: %v", m)
	}
	if m := missing(`SELECT view_name FROM duckdb_views() WHERE NOT internal AND coalesce(comment, '') = ''`); len(m) > 0 {
		t.Errorf("views without a comment: %v", m)
	}
	if m := missing(`SELECT c.table_name || '.' || c.column_name FROM duckdb_columns() c JOIN duckdb_tables() t USING (table_name)
		WHERE NOT t.internal AND c.table_name <> 'schema_migrations' AND coalesce(c.comment, '') = ''`); len(m) > 0 {
		t.Errorf("table columns without a comment: %v", m)
	}
	var got string
	if err := ro.DB().QueryRowContext(ctx, `SELECT comment FROM duckdb_columns() WHERE table_name = 'usage' AND column_name = 'cost'`).Scan(&got); err != nil || got == "" {
		t.Errorf("usage.cost comment %q, %v", got, err)
	}
}
