// Package atomicfile owns writing a file whole or not at all, the one way
// Tally replaces a file a reader may be looking at: a workbook, the metrics
// textfile, an export's manifest; and the sha256 of a file so written
// (SHA256), which a close records and a delivery checks.
package atomicfile

import (
	"context"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// TempPattern is the os.CreateTemp pattern of the temporary files Write
// makes beside a file named base: hidden, and not ending in the file's own
// extension (a textfile collector reading *.prom never sees half a file).
func TempPattern(base string) string { return "." + base + ".*.tmp" }

// Write replaces path with what fill writes: into a temporary file in the
// same folder, given mode, synced and then renamed onto path, so a reader
// sees the old file or the whole new one, never half of one. When fill
// fails, or ctx is done before the rename, the temporary file is removed,
// path is left as it was, and fill's or ctx's error is returned as is.
func Write(ctx context.Context, path string, mode fs.FileMode, fill func(io.Writer) error) (err error) {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, TempPattern(filepath.Base(path)))
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			_ = tmp.Close()
			_ = os.Remove(tmp.Name())
		}
	}()
	if err := tmp.Chmod(mode); err != nil {
		return err
	}
	if err := fill(tmp); err != nil {
		return err
	}
	if err := tmp.Sync(); err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	// The last chance to stop: after the rename the new file is in place.
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	SyncDir(dir)
	return nil
}

// SyncDir makes a rename in dir durable where the file system can sync a
// folder; where it cannot, the renamed file is complete all the same.
func SyncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		_ = d.Close()
	}
}
