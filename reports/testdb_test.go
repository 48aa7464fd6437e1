package reports

import (
	"database/sql"
	"io/fs"
	"path/filepath"
	"sort"
	"testing"

	_ "github.com/duckdb/duckdb-go/v2"

	tallysql "github.com/tally-dev/tally/sql"
)

// OpenTestDB creates a DuckDB file, named name in a temp dir, with the
// schema applied but none of the views: the workbook reads tables and
// inlines the views it needs, so it must work on an analysts' copy that an
// older Tally published. The macros the views and queries call are there,
// as on every connection the store opens (which defines them itself).
// Exported for the external tests of this package.
func OpenTestDB(t testing.TB, name string) *sql.DB {
	t.Helper()
	db, err := sql.Open("duckdb", filepath.Join(t.TempDir(), name))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	// As store's connections are: the queries' month bounds are UTC.
	if _, err := db.Exec("SET GLOBAL TimeZone = 'UTC'"); err != nil {
		t.Fatal(err)
	}
	names, err := fs.Glob(tallysql.Schema, "schema/*.sql")
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(names)
	for _, n := range names {
		text, err := fs.ReadFile(tallysql.Schema, n)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.Exec(tallysql.SchemaText(string(text), "default", "")); err != nil {
			t.Fatalf("apply %s: %v", n, err)
		}
	}
	macros, err := fs.Glob(tallysql.Macros, "macros/*.sql")
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range macros {
		text, err := fs.ReadFile(tallysql.Macros, n)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.Exec(string(text)); err != nil {
			t.Fatalf("create %s: %v", n, err)
		}
	}
	return db
}
