package atomicfile

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
)

func TestWrite(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "book.xlsx")
	ctx := context.Background()
	write := func(ctx context.Context, text string, fail error) error {
		return Write(ctx, path, 0o640, func(w io.Writer) error {
			if _, err := io.WriteString(w, text); err != nil {
				return err
			}
			return fail
		})
	}
	if err := write(ctx, "one", nil); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	if err := write(ctx, "half", boom); err != boom {
		t.Fatalf("fill's error came back as %v", err)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if err := write(cancelled, "late", nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled write: %v", err)
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != "one" {
		t.Fatalf("file %q %v; a failed or cancelled write must leave the old one", b, err)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o640 {
		t.Errorf("mode %v", fi.Mode())
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("temporary files left: %v", entries)
	}
}
