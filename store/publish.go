package store

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// PublishedPath is where Publish puts the analysts' copy of the database at
// dbPath: "data/tally.duckdb" → "data/tally.published.duckdb".
func PublishedPath(dbPath string) string {
	ext := filepath.Ext(dbPath)
	if ext == "" || ext == filepath.Base(dbPath) {
		return dbPath + ".published"
	}
	return strings.TrimSuffix(dbPath, ext) + ".published" + ext
}

// Publish writes a read-only copy of the database for analysts beside it,
// at PublishedPath, and returns that path.
//
// After a run, when nothing else writes, the copy is the database file
// itself, copied after a checkpoint (see copyFile), which takes about as
// long as reading the file. When a load running at the same time keeps
// that from giving a consistent copy, DuckDB makes the copy (see
// copyDatabase): it reads one consistent snapshot, so such loads neither
// block it nor tear it, and the copy comes out compacted. Either way it is
// written under a temporary name in the same folder, synced, and renamed
// into place, so a reader sees the old copy or the new one, never a
// half-written file; a session that has the old copy open keeps reading
// it.
func (s *Store) Publish(ctx context.Context) (string, error) {
	dst := PublishedPath(s.path)
	if err := s.writable("publish " + dst); err != nil {
		return "", err
	}
	s.publishMu.Lock()
	defer s.publishMu.Unlock()
	if err := s.publish(ctx, dst); err != nil {
		return "", fmt.Errorf("publish %s: %w", dst, err)
	}
	return dst, nil
}

func (s *Store) publish(ctx context.Context, dst string) (err error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return err
	}
	// Only the one read-write process publishes, one call at a time, so a
	// temporary copy still lying around was left by a killed run.
	if stale, err := filepath.Glob(globEscape(dst) + ".tmp-*"); err == nil {
		for _, f := range stale {
			os.Remove(f)
		}
	}
	suffix := hex.EncodeToString(b[:])
	tmp := dst + ".tmp-" + suffix
	defer func() {
		if err != nil {
			os.Remove(tmp)
			os.Remove(tmp + ".wal")
		}
	}()
	copied, err := s.copyFile(ctx, tmp)
	if err != nil {
		return err
	}
	if !copied {
		if err := s.copyDatabase(ctx, tmp, "tally_publish_"+suffix); err != nil {
			return err
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	f, err := os.OpenFile(tmp, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, dst); err != nil {
		return err
	}
	// Make the rename itself durable.
	if d, err := os.Open(filepath.Dir(dst)); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}

// headerSize is the part of a DuckDB file every checkpoint rewrites: the
// main header and the two database headers that take turns pointing at the
// latest checkpoint.
const headerSize = 3 * 4096

// copyFile checkpoints the database and copies its file to tmp. After a
// checkpoint the file holds every committed change, and the blocks of that
// checkpoint are not written again until the next one; so the copy is a
// consistent database unless a checkpoint ran while it was made, which the
// file's headers tell. It reports false, and leaves no tmp, when it could
// not make such a copy: another transaction kept the checkpoint from
// running, or the headers changed during the copy.
func (s *Store) copyFile(ctx context.Context, tmp string) (ok bool, err error) {
	if _, err := s.db.ExecContext(ctx, "CHECKPOINT"); err != nil {
		if ctx.Err() != nil {
			return false, ctx.Err()
		}
		return false, nil
	}
	src, err := os.Open(s.path)
	if err != nil {
		return false, err
	}
	defer src.Close()
	before, err := readHeader(src)
	if err != nil {
		return false, err
	}
	if fi, err := os.Stat(s.path + ".wal"); err == nil && fi.Size() > 0 {
		return false, nil // a commit came in after the checkpoint
	}
	dstf, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return false, err
	}
	defer func() {
		if cerr := dstf.Close(); err == nil && cerr != nil {
			err = cerr
		}
		if !ok || err != nil {
			os.Remove(tmp)
		}
	}()
	if _, err := src.Seek(0, io.SeekStart); err != nil {
		return false, err
	}
	if _, err := io.Copy(dstf, src); err != nil {
		return false, fmt.Errorf("copy the database file: %w", err)
	}
	after, err := readHeader(src)
	if err != nil {
		return false, err
	}
	return bytes.Equal(before, after), nil
}

func readHeader(f *os.File) ([]byte, error) {
	h := make([]byte, headerSize)
	if _, err := f.ReadAt(h, 0); err != nil {
		return nil, fmt.Errorf("read the database file's header: %w", err)
	}
	return h, nil
}

// copyDatabase has DuckDB copy the database into a new file at tmp
// (ATTACH, COPY FROM DATABASE, DETACH): it reads one consistent snapshot,
// whatever else runs, and writes the copy compacted.
func (s *Store) copyDatabase(ctx context.Context, tmp, alias string) error {
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	var source string
	if err := conn.QueryRowContext(ctx, `SELECT current_database()`).Scan(&source); err != nil {
		return fmt.Errorf("name the database: %w", err)
	}
	// ATTACH takes no parameters; the path is quoted as a SQL string.
	if _, err := conn.ExecContext(ctx, "ATTACH "+quoteString(tmp)+" AS "+quoteIdent(alias)); err != nil {
		return fmt.Errorf("create the copy: %w", err)
	}
	_, copyErr := conn.ExecContext(ctx, "COPY FROM DATABASE "+quoteIdent(source)+" TO "+quoteIdent(alias))
	// DETACH checkpoints the copy into its file and closes it, also after
	// a failed copy, which is then removed.
	_, detachErr := conn.ExecContext(context.WithoutCancel(ctx), "DETACH "+quoteIdent(alias))
	if err := errors.Join(copyErr, detachErr); err != nil {
		return fmt.Errorf("copy the database: %w", err)
	}
	if _, err := os.Stat(tmp + ".wal"); err == nil {
		return errors.New("copy the database: the copy still has a write-ahead log after DETACH")
	}
	return nil
}

func quoteString(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

func quoteIdent(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

// globEscape escapes the characters filepath.Match treats specially.
func globEscape(s string) string {
	r := strings.NewReplacer(`\`, `\\`, "*", `\*`, "?", `\?`, "[", `\[`)
	return r.Replace(s)
}
