package configs

import (
	"errors"
	"strings"
	"testing"
)

func TestExportSection(t *testing.T) {
	cfg := mustParse(t, minimal+"export:\n  dir: /srv/lake\n  format: focus\n  focus_csv: true\n", noEnv)
	if want := (ExportConfig{Dir: "/srv/lake", Format: ExportFOCUS, FOCUSCSV: true}); cfg.Export != want {
		t.Errorf("export = %+v, want %+v", cfg.Export, want)
	}
	cfg = mustParse(t, minimal+"export:\n  dir: ../lake\n", noEnv)
	if cfg.Export.Dir != "/etc/lake" || cfg.Export.Format != ExportParquet || cfg.Export.FOCUSCSV {
		t.Errorf("relative dir and defaults: %+v", cfg.Export)
	}
}

func TestExportValidation(t *testing.T) {
	tests := []struct{ name, yml, want string }{
		{"format", "export:\n  format: csv\n", `export.format: "csv" is not one of parquet, focus (line 4)`},
		{"focus_csv", "export:\n  focus_csv: sometimes\n", `export.focus_csv: "sometimes" is not true or false (line 4)`},
		{"dir a list", "export:\n  dir: [a, b]\n", "export.dir: must be a single value, not a list"},
		{"unknown key", "export:\n  folder: x\n", "export.folder: unknown key; known keys in export: dir, format, focus_csv"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(minimal+tc.yml), "/etc/tally", noEnv)
			var ce *Error
			if !errors.As(err, &ce) {
				t.Fatalf("got %v, want a *Error", err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not contain %q", err, tc.want)
			}
		})
	}
}
