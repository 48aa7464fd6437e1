package store

import (
	"context"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tally-dev/tally"
)

// The copy is the database file copied after a checkpoint: it holds what
// was committed, not what an open transaction changed.
func TestPublishCopiesTheCommittedFile(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "tally.duckdb")
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	jan := window(t, tally.Day, "2026-01-01", "2026-02-01")
	load(t, s, tally.UsageQuery{Window: jan}, row(date(t, "2026-01-02"), "enc", "a", "1.5"), row(date(t, "2026-01-03"), "enc", "b", "2"))

	// A load in progress: its transaction is open, uncommitted.
	conn, err := s.db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "BEGIN TRANSACTION"); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(ctx, "DELETE FROM usage"); err != nil {
		t.Fatal(err)
	}
	tmp := PublishedPath(path) + ".tmp-test"
	if ok, err := s.copyFile(ctx, tmp); err != nil || !ok {
		t.Fatalf("copyFile = %v, %v; want a copy", ok, err)
	}
	checkCopy(t, tmp, 2)
	if _, err := conn.ExecContext(ctx, "COMMIT"); err != nil {
		t.Fatal(err)
	}
	pub, err := s.Publish(ctx)
	if err != nil {
		t.Fatal(err)
	}
	checkCopy(t, pub, 0)

	// DuckDB's own copy, used when the file changed while it was copied.
	load(t, s, tally.UsageQuery{Window: jan}, row(date(t, "2026-01-02"), "enc", "a", "1.5"))
	snap := PublishedPath(path) + ".tmp-snapshot"
	if err := s.copyDatabase(ctx, snap, "tally_publish_test"); err != nil {
		t.Fatal(err)
	}
	checkCopy(t, snap, 1)
}

// While commits and checkpoints keep coming, every copy copyFile keeps is
// a whole database as some commit left it.
func TestPublishFileCopyUnderCommits(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "tally.duckdb")
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var committed atomic.Int64
	stop := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		day := date(t, "2026-01-01")
		for i := 0; ; i++ {
			select {
			case <-stop:
				done <- nil
				return
			default:
			}
			w := tally.Window{Start: day.AddDate(0, 0, i), End: day.AddDate(0, 0, i+1), Granularity: tally.Day}
			var rows []tally.MeterData
			for k := range 500 {
				rows = append(rows, row(w.Start, fmt.Sprintf("m%d", k), "p", "1"))
			}
			if _, err := s.LoadWindow(ctx, tally.UsageQuery{Window: w}, NewRunID(), rowsOf(rows...)); err != nil {
				done <- err
				return
			}
			committed.Add(500)
			// A real load spends most of its time waiting on the network;
			// without a pause here the writer commits so often that on a
			// busy machine no copy between two commits ever succeeds.
			time.Sleep(time.Duration(i%4) * time.Millisecond)
			if i%3 == 0 {
				// Refused while copyFile's own checkpoint runs: fine.
				s.db.ExecContext(ctx, "CHECKPOINT")
			}
		}
	}()
	kept, tries := 0, 0
	deadline := time.Now().Add(30 * time.Second)
	for i := 0; kept < 5 && (i < 30 || time.Now().Before(deadline)); i++ {
		tries++
		tmp := filepath.Join(t.TempDir(), fmt.Sprintf("copy-%d.duckdb", i))
		low := committed.Load()
		ok, err := s.copyFile(ctx, tmp)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			continue
		}
		kept++
		ro, err := Open(ctx, tmp, ReadOnly())
		if err != nil {
			t.Fatalf("copy %d does not open: %v", i, err)
		}
		n := count(t, ro, `SELECT count(*) FROM usage`)
		ro.Close()
		if n < low || n%500 != 0 {
			t.Fatalf("copy %d has %d rows; at least %d committed, in loads of 500", i, n, low)
		}
		time.Sleep(5 * time.Millisecond)
	}
	close(stop)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if kept == 0 {
		t.Fatal("no copy was kept")
	}
	t.Logf("%d of %d copies kept, %d rows committed", kept, tries, committed.Load())
}

func checkCopy(t *testing.T, path string, rows int64) {
	t.Helper()
	ro, err := Open(context.Background(), path, ReadOnly())
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if n := count(t, ro, `SELECT count(*) FROM usage`); n != rows {
		t.Fatalf("copy %s has %d rows, want %d", filepath.Base(path), n, rows)
	}
	if n := count(t, ro, `SELECT count(*) FROM schema_migrations`); n != int64(len(realMigrations(t))) {
		t.Fatalf("the copy records %d migrations", n)
	}
}
