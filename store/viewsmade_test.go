package store

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"testing/fstest"
)

// An open remakes the views, macros and comments only when what they are
// made from changed: a reopen of an unchanged store writes nothing at all,
// while a changed view file (a new Tally), a view dropped or a comment
// changed by hand is made again.
func TestViewsAreMadeAgainOnlyWhenTheirSQLOrTheCatalogChanged(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "tally.duckdb")
	o := defaultOptions()
	views := fstest.MapFS{}
	if err := fs.WalkDir(o.views, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(o.views, name)
		views[name] = &fstest.MapFile{Data: b}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	probe := func(n string) {
		views["zz_probe.sql"] = &fstest.MapFile{Data: []byte("-- zz_probe: a view of this test\nCREATE OR REPLACE VIEW zz_probe AS\nSELECT " + n + " AS n;\n")}
	}
	probe("1")
	o.views = views
	open := func(want int) *Store {
		t.Helper()
		s, err := openWith(ctx, path, o)
		if err != nil {
			t.Fatal(err)
		}
		var n int
		if err := s.DB().QueryRowContext(ctx, `SELECT n FROM zz_probe`).Scan(&n); err != nil || n != want {
			t.Fatalf("zz_probe says %d (%v), want %d", n, err, want)
		}
		return s
	}
	open(1).Close()

	// Unchanged: nothing is written, so nothing is in the write-ahead log.
	s := open(1)
	if fi, err := os.Stat(path + ".wal"); err == nil && fi.Size() > 0 {
		t.Errorf("a reopen of an unchanged store wrote %d bytes to the write-ahead log", fi.Size())
	}
	s.Close()

	probe("2")
	open(2).Close()

	s = open(2)
	for _, q := range []string{`DROP VIEW usage_finest`, `COMMENT ON VIEW zz_probe IS 'changed by hand'`} {
		if _, err := s.DB().ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	s = open(2)
	defer s.Close()
	var finest int
	var comment string
	if err := s.DB().QueryRowContext(ctx, `SELECT (SELECT count(*) FROM duckdb_views() WHERE view_name = 'usage_finest'), (SELECT comment FROM duckdb_views() WHERE view_name = 'zz_probe')`).Scan(&finest, &comment); err != nil {
		t.Fatal(err)
	}
	if finest != 1 || comment != "a view of this test" {
		t.Errorf("after a reopen: %d views usage_finest, zz_probe's comment %q; want the dropped view made again and the file's comment", finest, comment)
	}
}
