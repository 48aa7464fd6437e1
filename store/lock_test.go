package store

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// lockHelperEnv makes the test binary a process that takes the lock named
// in it, says so and waits to be killed.
const lockHelperEnv = "TALLY_STORE_TEST_LOCK_HOLDER"

func TestMain(m *testing.M) {
	if db := os.Getenv(openHelperEnv); db != "" {
		s, err := Open(context.Background(), db)
		if err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		s.Close()
		fmt.Println("opened")
		os.Exit(0)
	}
	if db := os.Getenv(lockHelperEnv); db != "" {
		l, err := AcquireLock(context.Background(), db, "fetch", 0)
		if err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		fmt.Println("locked")
		time.Sleep(time.Minute)
		l.Release()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func TestLockOneWriter(t *testing.T) {
	ctx := context.Background()
	db := filepath.Join(t.TempDir(), "tally.duckdb")
	if h, err := LockHolder(db); err != nil || h != nil {
		t.Fatalf("holder of a never-taken lock: %v, %v", h, err)
	}
	l, err := AcquireLock(ctx, db, "fetch", 0)
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(LockPath(db)); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("lock file: %v %v", fi, err)
	}
	h, err := LockHolder(db)
	if err != nil || h == nil || h.PID != os.Getpid() || h.Command != "fetch" || time.Since(h.Started) > time.Minute {
		t.Fatalf("holder = %+v, %v", h, err)
	}

	began := time.Now()
	_, err = AcquireLock(ctx, db, "report", 300*time.Millisecond)
	var le *LockedError
	if !errors.As(err, &le) {
		t.Fatalf("second lock: %v, want a *LockedError", err)
	}
	if waited := time.Since(began); waited < 300*time.Millisecond {
		t.Fatalf("gave up after %v, before the wait elapsed", waited)
	}
	if le.PID != os.Getpid() || le.Command != "fetch" || le.Path != LockPath(db) {
		t.Fatalf("LockedError = %+v", le)
	}
	mustContain(t, err, fmt.Sprintf("pid %d", os.Getpid()), `"fetch"`, LockPath(db), "wait for that run to finish")

	// A waiter gets the lock once the holder lets go.
	go func() {
		time.Sleep(200 * time.Millisecond)
		l.Release()
	}()
	l2, err := AcquireLock(ctx, db, "report", 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if h, _ := LockHolder(db); h == nil || h.Command != "report" {
		t.Fatalf("holder after hand-over = %+v", h)
	}
	if err := l.Release(); err != nil {
		t.Fatalf("second release: %v", err)
	}
	if err := l2.Release(); err != nil {
		t.Fatal(err)
	}
	if h, err := LockHolder(db); err != nil || h != nil {
		t.Fatalf("holder after release: %+v, %v", h, err)
	}

	cctx, cancel := context.WithCancel(ctx)
	l3, _ := AcquireLock(ctx, db, "fetch", 0)
	defer l3.Release()
	cancel()
	_, err = AcquireLock(cctx, db, "report", time.Minute)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled wait: %v", err)
	}
}

func TestLockFreedWhenTheHolderIsKilled(t *testing.T) {
	db := filepath.Join(t.TempDir(), "tally.duckdb")
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), lockHelperEnv+"="+db)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || strings.TrimSpace(line) != "locked" {
		t.Fatalf("helper said %q, %v", line, err)
	}

	_, err = AcquireLock(context.Background(), db, "fetch", 50*time.Millisecond)
	mustContain(t, err, "pid "+strconv.Itoa(cmd.Process.Pid))

	if err := cmd.Process.Signal(os.Kill); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	l, err := AcquireLock(context.Background(), db, "fetch", 0)
	if err != nil {
		t.Fatalf("lock of a killed holder: %v", err)
	}
	l.Release()
}

// The database's own folder is made when its parent exists (data/ beside
// the config); a path missing more than that is refused, nothing made.
func TestLockMissingFolder(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "nope", "deeper")
	_, err := AcquireLock(context.Background(), filepath.Join(dir, "tally.duckdb"), "fetch", 0)
	mustContain(t, err, "folder "+dir+" does not exist")
	if _, err := os.Stat(filepath.Dir(dir)); !os.IsNotExist(err) {
		t.Fatal("a refused lock created a folder")
	}

	data := filepath.Join(t.TempDir(), "data")
	l, err := AcquireLock(context.Background(), filepath.Join(data, "tally.duckdb"), "fetch", 0)
	if err != nil {
		t.Fatalf("lock in a missing last folder: %v", err)
	}
	defer l.Release()
	if fi, err := os.Stat(data); err != nil || !fi.IsDir() || fi.Mode().Perm()&0o007 != 0 {
		t.Fatalf("the database's folder: %v %v, want a folder others cannot read", fi, err)
	}
}
