package store

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/tally-dev/tally"
)

func TestPublishedPath(t *testing.T) {
	for in, want := range map[string]string{
		"data/tally.duckdb":    "data/tally.published.duckdb",
		"/var/lib/tally/db.db": "/var/lib/tally/db.published.db",
		"tally":                "tally.published",
		"data/.duckdb":         "data/.duckdb.published",
	} {
		if got := PublishedPath(in); got != want {
			t.Errorf("PublishedPath(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestPublishWhileTheWriterKeepsWriting(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "tally.duckdb")
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	jan := window(t, tally.Day, "2026-01-01", "2026-02-01")
	load(t, s, tally.UsageQuery{Window: jan}, row(date(t, "2026-01-02"), "enc", "a", "1.000000000001"), row(date(t, "2026-01-03"), "enc", "b", "2"))
	if err := s.SaveSnapshot(ctx, NewRunID(), time.Now(), Reference{Projects: []tally.Project{{Name: "a"}}}); err != nil {
		t.Fatal(err)
	}
	// A copy left by a killed run is cleared away.
	stale := PublishedPath(path) + ".tmp-deadbeef"
	if err := os.WriteFile(stale, []byte("half a copy"), 0o600); err != nil {
		t.Fatal(err)
	}

	pub, err := s.Publish(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if pub != PublishedPath(path) {
		t.Fatalf("published to %s, want %s", pub, PublishedPath(path))
	}
	fi, err := os.Stat(pub)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		t.Errorf("published copy has mode %v, want no group or world access", fi.Mode().Perm())
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if filepath.Ext(e.Name()) != ".duckdb" && e.Name() != "tally.duckdb.wal" {
			t.Errorf("left behind: %s", e.Name())
		}
	}

	// The writer keeps loading while an analyst reads the copy.
	ro, err := Open(ctx, pub, ReadOnly())
	if err != nil {
		t.Fatal(err)
	}
	loaded := make(chan error, 1)
	go func() {
		feb := window(t, tally.Day, "2026-02-01", "2026-03-01")
		_, err := s.LoadWindow(ctx, tally.UsageQuery{Window: feb}, NewRunID(), func(yield func(tally.MeterData, error) bool) {
			for i := range 20_000 {
				if !yield(row(date(t, "2026-02-01").AddDate(0, 0, i%28), "enc", "c", "3"), nil) {
					return
				}
			}
		})
		loaded <- err
	}()
	for range 5 {
		if n := count(t, ro, `SELECT count(*) FROM usage`); n != 2 {
			t.Fatalf("published copy has %d rows, want 2", n)
		}
		if got := mustDecimal(t, scalar(t, ro, `SELECT sum(cost) FROM usage`)); got.Cmp(tally.MustDecimal("3.000000000001")) != 0 {
			t.Fatalf("published sum %s", got)
		}
	}
	if name := scalar(t, ro, `SELECT name FROM projects`); name != "a" {
		t.Fatalf("the projects view in the copy gives %v", name)
	}
	if n := count(t, ro, `SELECT count(*) FROM schema_migrations`); n != int64(len(realMigrations(t))) {
		t.Fatalf("the copy records %d migrations", n)
	}
	_, err = ro.DB().Exec(`DELETE FROM usage`)
	mustContain(t, err, "read-only")
	if err := <-loaded; err != nil {
		t.Fatal(err)
	}

	// Publishing again replaces the copy under the open reader, which keeps
	// its consistent old view; a new reader sees the new copy.
	if _, err := s.Publish(ctx); err != nil {
		t.Fatal(err)
	}
	if n := count(t, ro, `SELECT count(*) FROM usage`); n != 2 {
		t.Fatalf("the open reader now sees %d rows, want its old 2", n)
	}
	ro.Close()
	ro, err = Open(ctx, pub, ReadOnly())
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if n := count(t, ro, `SELECT count(*) FROM usage`); n != 20_002 {
		t.Fatalf("the new copy has %d rows, want 20002", n)
	}
}

func TestPublishRefusedOnAReadOnlyStore(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "tally.duckdb")
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	ro, err := Open(ctx, path, ReadOnly())
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	_, err = ro.Publish(ctx)
	mustContain(t, err, "read-only")
	if _, err := os.Stat(PublishedPath(path)); !os.IsNotExist(err) {
		t.Fatal("a copy was published")
	}
}
