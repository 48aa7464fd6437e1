package store

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"testing/fstest"
	"time"

	"github.com/tally-dev/tally"
)

// realMigrations are the embedded sql/schema files.
func realMigrations(t *testing.T) []migration {
	t.Helper()
	ms, err := readMigrations(defaultOptions().migrations)
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) == 0 {
		t.Fatal("no migrations embedded")
	}
	return ms
}

// migrationsFS builds a migrations folder from the first n real migrations
// plus extra files.
func migrationsFS(t *testing.T, n int, extra map[string]string) fstest.MapFS {
	t.Helper()
	fsys := fstest.MapFS{}
	for _, m := range realMigrations(t)[:n] {
		fsys[m.name] = &fstest.MapFile{Data: []byte(m.text)}
	}
	for name, text := range extra {
		fsys[name] = &fstest.MapFile{Data: []byte(text)}
	}
	return fsys
}

func appliedMigrations(t *testing.T, s *Store) map[int]string {
	t.Helper()
	rows, err := s.DB().Query(`SELECT version, name FROM schema_migrations ORDER BY version`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	got := map[int]string{}
	for rows.Next() {
		var v int
		var name string
		if err := rows.Scan(&v, &name); err != nil {
			t.Fatal(err)
		}
		got[v] = name
	}
	return got
}

func TestOpenAppliesAndRecordsMigrations(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "tally.duckdb")
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	got := appliedMigrations(t, s)
	for _, m := range realMigrations(t) {
		if got[m.version] != m.name[:len(m.name)-len(".sql")] {
			t.Errorf("migration %d: recorded %q, want %q", m.version, got[m.version], m.name)
		}
	}
	if len(got) != len(realMigrations(t)) {
		t.Errorf("recorded %d migrations, want %d", len(got), len(realMigrations(t)))
	}
	for _, name := range []string{"usage", "fetch_windows", "runs", "payment_methods", "rate_card_prices", "projects", "locations", "organization"} {
		if n := count(t, s, `SELECT count(*) FROM duckdb_tables() WHERE table_name = ?`, name) +
			count(t, s, `SELECT count(*) FROM duckdb_views() WHERE view_name = ?`, name); n != 1 {
			t.Errorf("%s: found %d tables or views, want 1", name, n)
		}
	}
	var firstApplied time.Time
	if err := s.DB().QueryRow(`SELECT max(applied_at) FROM schema_migrations`).Scan(&firstApplied); err != nil {
		t.Fatal(err)
	}
	// A write puts the write-ahead log beside the database: it holds the same
	// data, so it must be as private as the file.
	load(t, s, tally.UsageQuery{Window: window(t, tally.Day, "2026-01-01", "2026-01-02")}, row(date(t, "2026-01-01"), "m", "p", "1"))
	for _, f := range []string{path, path + ".wal"} {
		fi, err := os.Stat(f)
		if os.IsNotExist(err) && f != path {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm()&0o077 != 0 {
			t.Errorf("%s has mode %v, want no group or world access", f, fi.Mode().Perm())
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s, err = Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if again := appliedMigrations(t, s); len(again) != len(got) {
		t.Errorf("reopening: %d migrations recorded, want %d", len(again), len(got))
	}
	var lastApplied time.Time
	if err := s.DB().QueryRow(`SELECT max(applied_at) FROM schema_migrations`).Scan(&lastApplied); err != nil {
		t.Fatal(err)
	}
	if !lastApplied.Equal(firstApplied) {
		t.Errorf("reopening applied a migration again: applied_at %v, was %v", lastApplied, firstApplied)
	}
	if n := count(t, s, `SELECT count(*) FROM usage`); n != 1 {
		t.Errorf("reopening: %d usage rows, want 1", n)
	}
}

func TestOpenUpgradesAnOlderDatabase(t *testing.T) {
	ctx := context.Background()
	real := realMigrations(t)

	t.Run("missing the last real migration", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "tally.duckdb")
		o := defaultOptions()
		o.migrations = migrationsFS(t, len(real)-1, nil)
		// The older tally shipped views matching its own schema. The last
		// migration (0020) adds a table no view reads (lake_loads), so
		// this tally's views are that tally's; without views the open
		// fails where a schema that has month_close_keys reads the
		// closed_months view (keepMissingCloseKeys), as no tally's did.
		old, err := openWith(ctx, path, o)
		if err != nil {
			t.Fatal(err)
		}
		if n := len(appliedMigrations(t, old)); n != len(real)-1 {
			t.Fatalf("old database has %d migrations, want %d", n, len(real)-1)
		}
		old.Close()

		s, err := Open(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if n := len(appliedMigrations(t, s)); n != len(real) {
			t.Fatalf("upgraded database has %d migrations, want %d", n, len(real))
		}
		load(t, s, tally.UsageQuery{Window: window(t, tally.Day, "2026-01-01", "2026-01-02")}, row(date(t, "2026-01-01"), "m", "p", "1"))
	})

	t.Run("a later migration over existing data", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "tally.duckdb")
		s, err := Open(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		id := NewRunID()
		if err := s.BeginRun(ctx, id, "fetch", ""); err != nil {
			t.Fatal(err)
		}
		s.Close()

		next := real[len(real)-1].version + 1
		name := filepathBase(next, "add_run_host")
		o := defaultOptions()
		o.migrations = migrationsFS(t, len(real), map[string]string{
			name: `ALTER TABLE runs ADD COLUMN host VARCHAR DEFAULT 'unknown';`,
		})
		for range 2 { // the second open must apply nothing
			s, err = openWith(ctx, path, o)
			if err != nil {
				t.Fatal(err)
			}
			applied := appliedMigrations(t, s)
			if len(applied) != len(real)+1 || applied[next] != name[:len(name)-len(".sql")] {
				t.Fatalf("applied %v, want the real ones and %s", applied, name)
			}
			if host := scalar(t, s, `SELECT host FROM runs WHERE id = ?::UUID`, id.String()); host != "unknown" {
				t.Fatalf("host of the existing run = %v, want the default", host)
			}
			s.Close()
		}

		// This tally does not know that migration: it must not use the file.
		_, err = Open(ctx, path)
		mustContain(t, err, "newer than this tally")
	})

	t.Run("a failing migration leaves the database as it was", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "tally.duckdb")
		next := real[len(real)-1].version + 1
		name := filepathBase(next, "broken")
		o := defaultOptions()
		o.migrations = migrationsFS(t, len(real), map[string]string{
			name: "CREATE TABLE half_done (x INTEGER);\nINSERT INTO half_done VALUES (1);\nSELECT CAST('not a number' AS INTEGER);",
		})
		_, err := openWith(ctx, path, o)
		mustContain(t, err, name)
		s, err := Open(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if n := len(appliedMigrations(t, s)); n != len(real) {
			t.Errorf("%d migrations recorded, want %d", n, len(real))
		}
		if n := count(t, s, `SELECT count(*) FROM duckdb_tables() WHERE table_name = 'half_done'`); n != 0 {
			t.Error("the failed migration's first statement was kept")
		}
	})
}

func filepathBase(version int, name string) string {
	return fmt.Sprintf("%04d_%s.sql", version, name)
}

func TestOpenRefusesWhatIsNotADuckDBFile(t *testing.T) {
	for name, content := range map[string][]byte{
		"text":  []byte("date,meter,cost\n2026-01-01,encoding,1.5\n"),
		"empty": {},
		"short": []byte("DUCK"),
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "tally.duckdb")
			if err := os.WriteFile(path, content, 0o644); err != nil {
				t.Fatal(err)
			}
			before, _ := os.Stat(path)
			_, err := Open(context.Background(), path)
			mustContain(t, err, path, "not a DuckDB database", "untouched")
			after, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(after, content) {
				t.Fatalf("file changed: %q", after)
			}
			if fi, _ := os.Stat(path); fi.Mode() != before.Mode() || !fi.ModTime().Equal(before.ModTime()) {
				t.Fatal("file mode or time changed")
			}
			if _, err := Open(context.Background(), path, ReadOnly()); err == nil {
				t.Fatal("Open with ReadOnly accepted it")
			}
			if _, err := os.Stat(path + ".wal"); !os.IsNotExist(err) {
				t.Fatal("a write-ahead log appeared beside it")
			}
		})
	}
}

func TestOpenMissingFolder(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "typo", "data")
	_, err := Open(context.Background(), filepath.Join(dir, "tally.duckdb"))
	mustContain(t, err, "folder "+dir+" does not exist", "create it")
	if _, err := os.Stat(filepath.Dir(dir)); !os.IsNotExist(err) {
		t.Fatal("Open created a folder for a path missing two levels")
	}
	// The database's own folder, under one that exists, is made.
	st, err := Open(context.Background(), filepath.Join(t.TempDir(), "data", "tally.duckdb"))
	if err != nil {
		t.Fatalf("open in a missing last folder: %v", err)
	}
	st.Close()
}

func TestOpenReadOnly(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "tally.duckdb")
	_, err := Open(ctx, path, ReadOnly())
	mustContain(t, err, "no such database file")

	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	load(t, s, tally.UsageQuery{Window: window(t, tally.Day, "2026-01-01", "2026-01-02")}, row(date(t, "2026-01-01"), "m", "p", "1"))
	s.Close()

	ro, err := Open(ctx, path, ReadOnly())
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if _, err := ro.DB().Exec(`DELETE FROM usage`); err == nil {
		t.Fatal("DELETE on a read-only store succeeded")
	}
	_, err = ro.LoadWindow(ctx, tally.UsageQuery{Window: window(t, tally.Day, "2026-01-01", "2026-01-02")}, NewRunID(), rowsOf())
	mustContain(t, err, "read-only")
	if err := ro.BeginRun(ctx, NewRunID(), "fetch", ""); err == nil {
		t.Fatal("BeginRun on a read-only store succeeded")
	}
	if n := count(t, ro, `SELECT count(*) FROM usage`); n != 1 {
		t.Fatalf("%d rows, want 1", n)
	}
}

func TestRuns(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	id := NewRunID()
	if id.Version() != 7 {
		t.Fatalf("run id version %d, want 7", id.Version())
	}
	if err := s.BeginRun(ctx, id, "fetch", "nightly"); err != nil {
		t.Fatal(err)
	}
	if st := scalar(t, s, `SELECT status FROM runs WHERE id = ?::UUID`, id.String()); st != "running" {
		t.Fatalf("status %v, want running", st)
	}
	err := s.FinishRun(ctx, id, RunResult{Status: "done"})
	mustContain(t, err, `"done"`, "ok, partial, failed, skipped")
	if err := s.FinishRun(ctx, id, RunResult{Status: RunPartial, Err: "window 2026-01-01..2026-02-01: 503", Rows: 42, Windows: 3}); err != nil {
		t.Fatal(err)
	}
	res, err := s.Query(ctx, `SELECT command, job, status, error, rows, windows, finished >= started FROM runs`)
	if err != nil {
		t.Fatal(err)
	}
	want := []any{"fetch", "nightly", "partial", "window 2026-01-01..2026-02-01: 503", int64(42), int32(3), true}
	for i, v := range res.Rows[0] {
		if v != want[i] {
			t.Errorf("%s = %v (%T), want %v", res.Columns[i], v, v, want[i])
		}
	}
	mustContain(t, s.FinishRun(ctx, NewRunID(), RunResult{Status: RunOK}), "no such run")
}
