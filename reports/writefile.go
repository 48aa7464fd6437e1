package reports

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/tally-dev/tally/internal/atomicfile"
)

// staleTempAge is how old a workbook's temporary file must be before a later
// write removes it as left by a killed process. Writing a month's workbook
// takes seconds to minutes, so an hour never catches one still being
// written by a concurrent `tally report`.
const staleTempAge = time.Hour

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
	removeStaleTemps(dir, filepath.Base(path), time.Now())
	var buildErr error
	err = atomicfile.Write(ctx, path, 0o640, func(w io.Writer) error {
		buildErr = Build(ctx, src, p, w, opts)
		return buildErr
	})
	if err != nil && err != buildErr {
		return fmt.Errorf("write report %s: %w", path, err)
	}
	return err
}

// removeStaleTemps removes the temporary files a killed writer of the same
// workbook left behind, so they do not pile up beside it night after night.
func removeStaleTemps(dir, base string, now time.Time) {
	stale, err := filepath.Glob(filepath.Join(dir, atomicfile.TempPattern(globEscape(base))))
	if err != nil {
		return
	}
	for _, f := range stale {
		if fi, err := os.Lstat(f); err == nil && fi.Mode().IsRegular() && now.Sub(fi.ModTime()) > staleTempAge {
			_ = os.Remove(f)
		}
	}
}

// globEscape quotes the characters filepath.Match treats specially.
func globEscape(s string) string {
	var b []byte
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '*', '?', '[', '\\':
			b = append(b, '\\')
		}
		b = append(b, s[i])
	}
	return string(b)
}
