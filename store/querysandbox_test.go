package store

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/tally-dev/tally"
)

// TestQuerySandboxEscapes: every way out of tally query's sandbox that an
// adversarial run tried, each refused, with the database and its folder
// unchanged. DuckDB's spill folder (<db>.tmp, which DuckDB would allow a
// sandboxed query to write) exists beforehand, as after a query that
// spilled.
func TestQuerySandboxEscapes(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "tally.published.duckdb")
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	load(t, s, tally.UsageQuery{Window: window(t, tally.Day, "2026-01-01", "2026-01-08")},
		row(date(t, "2026-01-01"), "enc", "a", "1"), row(date(t, "2026-01-02"), "enc", "a", "2"))
	s.Close()
	spill := path + ".tmp"
	if err := os.Mkdir(spill, 0o700); err != nil {
		t.Fatal(err)
	}
	secretFile := filepath.Join(dir, "token")
	os.WriteFile(secretFile, []byte("tok"), 0o600)
	before := folderState(t, dir)

	q, err := Open(ctx, path, Query(QueryLimits{MemoryBytes: 64 << 20}))
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	// DuckDB's sandbox refuses a COPY to any other file as it binds the
	// statement; what it would let through (the database's own file or its
	// log, any ATTACH) Tally refuses before it runs, as guarantees.md says.
	const sandboxed, refused = "disabled by configuration", "writes no file"
	for _, c := range []struct{ name, sql, says string }{ // says: a regular expression
		{"copy into the spill folder", "COPY usage TO '" + spill + "/dump.csv'", sandboxed},
		{"copy beside the database", "COPY (SELECT * FROM usage) TO '" + dir + "/dump.csv'", sandboxed},
		{"attach read-write in the spill folder", "ATTACH '" + spill + "/x.duckdb' AS x (READ_ONLY false)", refused},
		{"attach read-write beside the database", "ATTACH '" + dir + "/x.duckdb' AS x (READ_ONLY false)", refused},
		{"read another file", "SELECT * FROM read_text('" + secretFile + "')", "disabled by configuration"},
		{"glob the folder", "SELECT * FROM glob('" + dir + "/*')", "disabled by configuration"},
		{"spill folder back", "SET temp_directory = '" + spill + "'", "locked"},
		{"more memory", "SET memory_limit = '100GB'", "locked"},
		{"external access back", "SET enable_external_access = true", "locked"},
		{"copy over the database", "COPY usage TO '" + path + "'", refused},
		{"copy over its write-ahead log", "COPY usage TO '" + path + ".wal'", refused},
		{"attach the database read-write", "ATTACH '" + path + "' AS w (READ_ONLY false)", refused},
		{"attach its log read-write", "ATTACH '" + path + ".wal' AS w (READ_ONLY false)", refused},
		{"install an extension", "INSTALL httpfs", "disabled by configuration"},
		{"write", "DELETE FROM usage", "read-only"},
		{"several statements", "SELECT 1; SELECT 2", "several statements"},
		{"a write hidden behind a read", "SELECT 1; DELETE FROM usage", "several statements"},
		{"beyond the memory limit", "SELECT count(*) FROM (SELECT i, repeat('x', 1000) || i AS s FROM range(3000000) r(i) ORDER BY s)", "its limit of 64 MiB"},
	} {
		_, err := q.Query(ctx, c.sql)
		if err == nil || !regexp.MustCompile(c.says).MatchString(err.Error()) {
			t.Errorf("%s: %s: got %v, want an error saying %q", c.name, c.sql, err, c.says)
		}
		if c.says == "several statements" && !errors.Is(err, ErrSeveralStatements) {
			t.Errorf("%s: %v is not ErrSeveralStatements", c.name, err)
		}
	}
	var temp, mem string
	if err := q.DB().QueryRowContext(ctx, "SELECT current_setting('temp_directory'), current_setting('memory_limit')").Scan(&temp, &mem); err != nil {
		t.Fatal(err)
	}
	if temp != "" || mem != "64.0 MiB" {
		t.Errorf("temp_directory %q, memory_limit %q: want spilling off and 64.0 MiB", temp, mem)
	}
	// One statement whose text holds a ';' is one statement.
	res, err := q.Query(ctx, "SELECT ';' AS semi, count(*) AS n FROM usage -- ; not a separator")
	if err != nil || len(res.Rows) != 1 || res.Rows[0][0] != ";" || res.Rows[0][1] != int64(2) {
		t.Errorf("a single statement with ';' in it: %v %v", res, err)
	}
	if after := folderState(t, dir); after != before {
		t.Errorf("the folder changed under the sandbox:\nbefore %s\nafter  %s", before, after)
	}
}

// TestQueryStopsOnCancel: a query that would run for minutes ends soon
// after its context does (SIGINT and SIGTERM cancel tally query's).
func TestQueryStopsOnCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	path := filepath.Join(t.TempDir(), "tally.duckdb")
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	q, err := Open(ctx, path, Query(QueryLimits{MemoryBytes: 64 << 20}))
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	time.AfterFunc(300*time.Millisecond, cancel)
	start := time.Now()
	_, err = q.Query(ctx, "SELECT sum(hash(i)) FROM range(1000000000000) r(i)")
	took := time.Since(start)
	if err == nil {
		t.Fatal("a cancelled query succeeded")
	}
	// The whole query takes hours: ending within seconds is the proof.
	if took > 20*time.Second {
		t.Errorf("the query ended %s after its start, 300ms after which it was cancelled", took)
	}
	t.Logf("cancelled after 300ms, returned after %s: %v", took, err)
}

// folderState lists a folder's files with their sizes and times.
func folderState(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			t.Fatal(err)
		}
		fi, _ := d.Info()
		b.WriteString(p + " " + fi.ModTime().String())
		if !d.IsDir() {
			b.WriteString(" " + fi.Mode().String())
		}
		b.WriteString("; ")
		return nil
	})
	return b.String()
}

// TestReadersMemoryLimit: a reader (tally report, status, export, plan)
// runs under DefaultQueryMemory, as analysts' SQL does, not DuckDB's 80 %
// of the machine, whose kept blocks grew tally export of 93.6M rows to
// 2.5 GB.
func TestReadersMemoryLimit(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "tally.duckdb")
	w, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Publish(ctx); err != nil {
		t.Fatal(err)
	}
	w.Close()
	limit := func(s *Store) string {
		t.Helper()
		defer s.Close()
		var mem string
		if err := s.DB().QueryRowContext(ctx, "SELECT current_setting('memory_limit')").Scan(&mem); err != nil {
			t.Fatal(err)
		}
		return mem
	}
	q, err := Open(ctx, path, Query(QueryLimits{MemoryBytes: DefaultQueryMemory()}))
	if err != nil {
		t.Fatal(err)
	}
	want := limit(q)
	r, err := Open(ctx, path, ReadOnly())
	if err != nil {
		t.Fatal(err)
	}
	if got := limit(r); got != want {
		t.Errorf("ReadOnly's memory_limit %s, want DefaultQueryMemory's %s", got, want)
	}
	p, err := Open(ctx, PublishedPath(path), ReadOnly(), Shared())
	if err != nil {
		t.Fatal(err)
	}
	if got := limit(p); got != want {
		t.Errorf("OpenPublished's memory_limit %s, want DefaultQueryMemory's %s", got, want)
	}
}
