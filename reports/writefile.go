package reports

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
)

// WriteFile builds the workbook into path. It writes a temporary file in
// the same folder (mode 0640), syncs it and renames it onto path, so a
// reader sees the old file or the whole new one, never half of one. On any
// error or cancellation the temporary file is removed and nothing is left
// under path. The folder is created when missing.
func WriteFile(ctx context.Context, src Source, p Period, path string, opts Options) (err error) {
	// Refuse a bad period or options before touching the file system.
	if err := p.validate(); err != nil {
		return fmt.Errorf("write report %s: %w", path, err)
	}
	if err := opts.normalise(); err != nil {
		return fmt.Errorf("write report %s: %w", path, err)
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return fmt.Errorf("write report %s: %w", path, err)
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return fmt.Errorf("write report %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			_ = tmp.Close()
			_ = os.Remove(tmp.Name())
		}
	}()
	if err := tmp.Chmod(0o640); err != nil {
		return fmt.Errorf("write report %s: %w", path, err)
	}
	if err := Build(ctx, src, p, tmp, opts); err != nil {
		return err
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("write report %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write report %s: %w", path, err)
	}
	// The last chance to stop: after the rename the new workbook is in place.
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("write report %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write report %s: %w", path, err)
	}
	syncDir(dir)
	return nil
}

// syncDir makes the rename durable where the file system can sync a
// folder; where it cannot, the renamed file is complete all the same.
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		_ = d.Close()
	}
}
