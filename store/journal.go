package store

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"syscall"

	"github.com/google/uuid"

	"github.com/tally-dev/tally/internal/secret"
)

// The journal holds runs that could not be written into the database when
// they happened: DuckDB lets one process at a time open it read-write, so a
// run that gave up waiting for another process's lock cannot record its
// skip there. It appends a JSON line to <db>.runs.jsonl instead, and the
// next run that holds the lock folds the file into `runs`.

// JournalPath is the journal of runs noted beside the database at dbPath.
func JournalPath(dbPath string) string { return dbPath + ".runs.jsonl" }

// AppendJournal notes r in the journal. Writers hold an flock on the file
// while they write, and check that the file they locked is still the one
// at the journal's path: a run folding the journal renames it away first,
// and a line written to the renamed file after the fold read it would be
// lost.
func AppendJournal(dbPath string, r RunInfo) error {
	r.Error = secret.Redact(r.Error)
	ws := make([]string, len(r.Warnings)) // r's slice is the caller's
	for i, w := range r.Warnings {
		ws[i] = secret.Redact(w)
	}
	r.Warnings = ws
	line, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("note run %s: %w", r.ID, err)
	}
	line = append(line, '\n')
	path := JournalPath(dbPath)
	for attempt := 0; attempt < 10; attempt++ {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
		if err != nil {
			return fmt.Errorf("note run %s in %s: %w", r.ID, path, err)
		}
		if err := flock(f); err != nil {
			f.Close()
			return fmt.Errorf("note run %s in %s: %w", r.ID, path, err)
		}
		if !samePath(f, path) {
			f.Close()
			continue
		}
		_, werr := f.Write(line)
		serr := f.Sync()
		cerr := f.Close()
		if err := errors.Join(werr, serr, cerr); err != nil {
			return fmt.Errorf("note run %s in %s: %w", r.ID, path, err)
		}
		return nil
	}
	return fmt.Errorf("note run %s in %s: the file kept being replaced", r.ID, path)
}

// flock takes an exclusive lock on f, waiting for it; closing f frees it.
func flock(f *os.File) error {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if !errors.Is(err, syscall.EINTR) {
			return err
		}
	}
}

// samePath reports whether f is the file at path now.
func samePath(f *os.File, path string) bool {
	a, err := f.Stat()
	if err != nil {
		return false
	}
	b, err := os.Stat(path)
	return err == nil && os.SameFile(a, b)
}

// FoldJournal records the journal's runs in st and removes what it
// recorded. The caller holds the database's lock. The journal is renamed
// aside before it is read, so runs noted meanwhile go to a new journal; a
// fold that dies half way leaves the renamed file, which the next fold
// reads again (recording a run twice keeps one row).
func (st *Store) FoldJournal(ctx context.Context, dbPath string) (int, error) {
	path := JournalPath(dbPath)
	if _, err := os.Stat(path); err == nil {
		aside := path + "." + uuid.NewString()
		if err := os.Rename(path, aside); err != nil {
			return 0, fmt.Errorf("fold journal %s: %w", path, err)
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return 0, fmt.Errorf("fold journal %s: %w", path, err)
	}
	files, err := filepath.Glob(globQuote(path) + ".*")
	if err != nil {
		return 0, fmt.Errorf("fold journal %s: %w", path, err)
	}
	n := 0
	for _, file := range files {
		runs, err := readJournal(file, true)
		if err != nil {
			return n, err
		}
		for _, r := range runs {
			if err := st.RecordRun(ctx, r); err != nil {
				return n, fmt.Errorf("fold journal %s: %w", file, err)
			}
			n++
		}
		if err := os.Remove(file); err != nil {
			return n, fmt.Errorf("fold journal %s: %w", file, err)
		}
	}
	return n, nil
}

// readJournal reads the runs of one journal file. With wait, it first
// waits for a writer that still holds the file. A torn last line (a writer
// that died mid-write) is left out.
func readJournal(file string, wait bool) ([]RunInfo, error) {
	f, err := os.Open(file)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read journal %s: %w", file, err)
	}
	defer f.Close()
	if wait {
		if err := flock(f); err != nil {
			return nil, fmt.Errorf("read journal %s: %w", file, err)
		}
	}
	var runs []RunInfo
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var r RunInfo
		if err := json.Unmarshal(line, &r); err != nil || r.ID == uuid.Nil {
			continue
		}
		runs = append(runs, r)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read journal %s: %w", file, err)
	}
	return runs, nil
}

// PendingRuns returns the runs noted in the journal of the database at
// dbPath that no run has folded into the database yet, oldest first. It
// takes no lock, so `tally status` can show them while a run is going on.
func PendingRuns(dbPath string) ([]RunInfo, error) {
	path := JournalPath(dbPath)
	files, err := filepath.Glob(globQuote(path) + ".*")
	if err != nil {
		return nil, fmt.Errorf("read journal %s: %w", path, err)
	}
	var out []RunInfo
	for _, file := range append(files, path) {
		runs, err := readJournal(file, false)
		if err != nil {
			return nil, err
		}
		out = append(out, runs...)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Started.Before(out[j].Started) })
	return out, nil
}

// globQuote escapes the glob metacharacters of a literal path.
func globQuote(s string) string {
	var b bytes.Buffer
	for _, r := range s {
		switch r {
		case '*', '?', '[', '\\':
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}
