package store

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
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
// The copy is made by DuckDB itself (ATTACH a new file, COPY FROM
// DATABASE, DETACH): it reads one consistent snapshot, so loads running at
// the same time neither block it nor tear it, and the copy comes out
// compacted. It is written under a temporary name in the same folder,
// synced, and renamed into place, so a reader sees the old copy or the new
// one, never a half-written file; a session that has the old copy open
// keeps reading it.
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
	alias := "tally_publish_" + suffix
	defer func() {
		if err != nil {
			os.Remove(tmp)
			os.Remove(tmp + ".wal")
		}
	}()
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

func quoteString(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

func quoteIdent(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

// globEscape escapes the characters filepath.Match treats specially.
func globEscape(s string) string {
	r := strings.NewReplacer(`\`, `\\`, "*", `\*`, "?", `\?`, "[", `\[`)
	return r.Replace(s)
}
