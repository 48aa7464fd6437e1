package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

// NoCopyError is a database that has no published copy yet: no run has
// ended since it was created.
type NoCopyError struct{ Path string }

func (e *NoCopyError) Error() string {
	return "no published copy of the database at " + e.Path + " yet"
}

func openReading(ctx context.Context, path string, open func(context.Context, string) (*Store, error)) (*Store, error) {
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return nil, &NoCopyError{Path: path}
	}
	st, err := open(ctx, path)
	if err == nil || !IsLockConflict(err) {
		return st, err
	}
	holder := lockHolderText(err)
	snap, cerr := snapshotFile(path)
	if cerr != nil {
		return nil, fmt.Errorf("%w\n(%s holds %s for writing, and a private copy could not be made: %v)", err, holder, path, cerr)
	}
	st, err = open(ctx, snap)
	if err != nil {
		os.Remove(snap)
		return nil, fmt.Errorf("%s is held for writing by %s; its private copy did not open either: %w", path, holder, err)
	}
	st.cleanup = func() { os.Remove(snap) }
	st.notice = fmt.Sprintf("%s is held for writing by %s, so this reads a private copy of it as it stood; "+
		"open the published copy read-only so that it never blocks anyone: duckdb -readonly %s, or duckdb.connect(%q, read_only=True) in Python",
		path, holder, path, path)
	return st, nil
}

// Notice is what a reader should tell its user about how the store was
// opened (a private copy of a locked file), or "".
func (s *Store) Notice() string { return s.notice }

// IsLockConflict reports whether err is DuckDB refusing a file another
// process holds for writing.
func IsLockConflict(err error) bool {
	return strings.Contains(err.Error(), "Conflicting lock") || strings.Contains(err.Error(), "Could not set lock")
}

var lockHolderRE = regexp.MustCompile(`held in (.+?) \(PID (\d+)\)`)

// lockHolderText names the process DuckDB says holds the lock.
func lockHolderText(err error) string {
	if m := lockHolderRE.FindStringSubmatch(err.Error()); m != nil {
		return fmt.Sprintf("%s (pid %s)", m[1], m[2])
	}
	return "another process"
}

// snapshotPrefix marks the private copies readers make beside a locked
// database; a reader killed before it removed its copy leaves one, which a
// later reader removes once it is an hour old.
const snapshotPrefix = ".tally-reader-"

// snapshotFile copies path's main file (without the holder's write-ahead
// log: what the holder wrote is not Tally's) to a private file beside it,
// readable by its owner only, like the database.
func snapshotFile(path string) (string, error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	if old, _ := filepath.Glob(filepath.Join(dir, snapshotPrefix+"*")); len(old) > 0 {
		for _, o := range old {
			if fi, err := os.Stat(o); err == nil && time.Since(fi.ModTime()) > time.Hour {
				os.Remove(o)
			}
		}
	}
	src, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer src.Close()
	dst, err := os.CreateTemp(dir, snapshotPrefix+base+"-*")
	if err != nil {
		return "", err
	}
	if _, err := io.Copy(dst, src); err != nil {
		dst.Close()
		os.Remove(dst.Name())
		return "", err
	}
	if err := dst.Close(); err != nil {
		os.Remove(dst.Name())
		return "", err
	}
	return dst.Name(), nil
}
