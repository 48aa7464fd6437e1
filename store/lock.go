package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"
)

// LockPath is the lock file of the database at dbPath.
func LockPath(dbPath string) string { return dbPath + ".lock" }

// LockInfo is what the lock file says about its holder.
type LockInfo struct {
	PID     int       `json:"pid"`
	Started time.Time `json:"started"`
	Command string    `json:"command"`
}

// Lock is the one-writer lock of a database, held until Release. It is an
// flock on the lock file, so the kernel releases it when the holder exits,
// even when killed.
type Lock struct {
	mu   sync.Mutex
	f    *os.File
	path string
}

// LockedError says who holds the lock AcquireLock could not get.
type LockedError struct {
	PID     int       // 0 when the holder could not be read
	Started time.Time // zero when unknown
	Command string
	Path    string // the lock file
}

func (e *LockedError) Error() string {
	holder := "another process"
	if e.PID > 0 {
		holder = fmt.Sprintf("pid %d", e.PID)
		if e.Command != "" {
			holder += fmt.Sprintf(" (command %q", e.Command)
			if !e.Started.IsZero() {
				holder += ", started " + e.Started.UTC().Format(time.RFC3339)
			}
			holder += ")"
		}
	}
	return fmt.Sprintf("the database is locked by %s through %s; wait for that run to finish (or stop it) and try again; the lock frees itself when its holder exits, so do not delete the file", holder, e.Path)
}

// pollInterval is how often AcquireLock tries again while it waits;
// NotifyEvery, how often a waiter is told it is still waiting.
const (
	pollInterval = 100 * time.Millisecond
	NotifyEvery  = 30 * time.Second
)

// AcquireLock takes the one-writer lock of the database at dbPath for
// command, trying until wait has elapsed (once when wait is 0). When
// another process holds it, the error is a *LockedError naming the holder.
func AcquireLock(ctx context.Context, dbPath, command string, wait time.Duration) (*Lock, error) {
	return AcquireLockNotify(ctx, dbPath, command, wait, nil)
}

// AcquireLockNotify is AcquireLock that calls waiting (when not nil) as
// soon as the lock is found held, and every NotifyEvery while it waits,
// with the holder (nil when unreadable) and the time waited so far: a wait
// of up to schedule.lock_wait must not look like a hang.
func AcquireLockNotify(ctx context.Context, dbPath, command string, wait time.Duration, waiting func(holder *LockInfo, waited time.Duration)) (*Lock, error) {
	path := LockPath(dbPath)
	dir := filepath.Dir(path)
	if err := ensureFolder(dbPath); err != nil {
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("lock %s: folder %s does not exist; create it (mkdir -p %s)", path, dir, dir)
	}
	// Checked before anything is opened: DuckDB would otherwise fail later,
	// on its write-ahead log, with less to go on.
	if err := syscall.Access(dir, 2 /* W_OK */); err != nil {
		return nil, fmt.Errorf("lock %s: folder %s is not writable by this user (%v): Tally writes the database, its write-ahead log, its lock and the analysts' copy there; give the user write access or point store.path elsewhere", path, dir, err)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	began := time.Now()
	deadline := began.Add(wait)
	var told time.Time
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			break
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		left := time.Until(deadline)
		if left <= 0 {
			f.Close()
			return nil, lockedError(path)
		}
		if waiting != nil && (told.IsZero() || time.Since(told) >= NotifyEvery) {
			told = time.Now()
			var holder *LockInfo
			if h, err := readHolder(path); err == nil {
				holder = &h
			}
			waiting(holder, told.Sub(began))
		}
		t := time.NewTimer(min(left, pollInterval))
		select {
		case <-ctx.Done():
			t.Stop()
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", path, ctx.Err())
		case <-t.C:
		}
	}
	info, _ := json.Marshal(LockInfo{PID: os.Getpid(), Started: time.Now().UTC(), Command: command})
	if err := writeHolder(f, info); err != nil {
		f.Close() // releases the flock
		return nil, fmt.Errorf("lock %s: write holder: %w", path, err)
	}
	return &Lock{f: f, path: path}, nil
}

func writeHolder(f *os.File, b []byte) error {
	if err := f.Truncate(0); err != nil {
		return err
	}
	_, err := f.WriteAt(b, 0)
	return err
}

// lockedError reads the holder from the lock file. The holder writes it
// just after taking the lock, so an empty or torn file is read once more.
func lockedError(path string) *LockedError {
	e := &LockedError{Path: path}
	for attempt := 0; attempt < 2; attempt++ {
		if info, err := readHolder(path); err == nil {
			e.PID, e.Started, e.Command = info.PID, info.Started, info.Command
			return e
		}
		time.Sleep(20 * time.Millisecond)
	}
	return e
}

func readHolder(path string) (LockInfo, error) {
	var info LockInfo
	f, err := os.Open(path)
	if err != nil {
		return info, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, 1<<16))
	if err != nil {
		return info, err
	}
	err = json.Unmarshal(b, &info)
	return info, err
}

// LockHolder reports who holds the lock of the database at dbPath, or nil
// when nobody does. It only peeks: it never blocks and takes no lock a
// writer would wait for beyond an instant.
func LockHolder(dbPath string) (*LockInfo, error) {
	path := LockPath(dbPath)
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read lock %s: %w", path, err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB); err == nil {
		syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		return nil, nil
	} else if !errors.Is(err, syscall.EWOULDBLOCK) {
		return nil, fmt.Errorf("read lock %s: %w", path, err)
	}
	e := lockedError(path)
	return &LockInfo{PID: e.PID, Started: e.Started, Command: e.Command}, nil
}

// Release gives the lock up. Releasing twice is harmless.
func (l *Lock) Release() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return nil
	}
	f := l.f
	l.f = nil
	// Clear the holder first, so nobody reads a finished run as the holder.
	terr := f.Truncate(0)
	uerr := syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	cerr := f.Close()
	if err := errors.Join(terr, uerr, cerr); err != nil {
		return fmt.Errorf("release lock %s: %w", l.path, err)
	}
	return nil
}
