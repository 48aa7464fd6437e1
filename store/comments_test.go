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

// A reopen writes only the comments the catalog does not hold as the SQL
// files say: one changed since comes back, and the views (defined again
// with it, as the catalog changed) keep theirs.
func TestCatalogCommentsFollowTheFilesOnReopen(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "tally.duckdb")
	st, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	var want string
	if err := st.DB().QueryRowContext(ctx, `SELECT comment FROM duckdb_columns() WHERE table_name = 'usage' AND column_name = 'cost'`).Scan(&want); err != nil || want == "" {
		t.Fatalf("usage.cost comment %q, %v", want, err)
	}
	if _, err := st.DB().ExecContext(ctx, `COMMENT ON COLUMN usage.cost IS 'changed by hand'`); err != nil {
		t.Fatal(err)
	}
	st.Close()
	if st, err = Open(ctx, path); err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var got string
	if err := st.DB().QueryRowContext(ctx, `SELECT comment FROM duckdb_columns() WHERE table_name = 'usage' AND column_name = 'cost'`).Scan(&got); err != nil || got != want {
		t.Errorf("usage.cost comment after a reopen %q (%v), want the file's %q", got, err, want)
	}
	var bare int
	if err := st.DB().QueryRowContext(ctx, `SELECT count(*) FROM duckdb_views() WHERE NOT internal AND coalesce(comment, '') = ''`).Scan(&bare); err != nil || bare != 0 {
		t.Errorf("%d views without a comment after a reopen (%v)", bare, err)
	}
}
