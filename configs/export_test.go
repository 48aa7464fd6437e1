package configs

import (
	"errors"
	"strings"
	"testing"
	"time"
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
		{"format", "export:\n  format: csv\n", `export.format: "csv" is not one of parquet, focus, iceberg (line 4)`},
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

func TestLakeSection(t *testing.T) {
	cfg := mustParse(t, minimal+"export:\n  format: iceberg\n", noEnv)
	if cfg.Export.Format != ExportIceberg || cfg.Lake != (LakeConfig{Namespace: DefaultLakeNamespace, KeepSnapshots: 7 * 24 * time.Hour, OrphanAge: 3 * 24 * time.Hour}) {
		t.Errorf("defaults: export %+v, lake %+v", cfg.Export, cfg.Lake)
	}
	cfg = mustParse(t, minimal+"lake:\n  namespace: billing_lake\n  catalog: sqlite:../lake/catalog.db\n  keep_snapshots: 36h\n  orphan_age: 1d\n", noEnv)
	if want := (LakeConfig{Namespace: "billing_lake", SQLite: "/etc/lake/catalog.db", KeepSnapshots: 36 * time.Hour, OrphanAge: 24 * time.Hour}); cfg.Lake != want {
		t.Errorf("lake = %+v, want %+v (a relative path beside the config)", cfg.Lake, want)
	}
}

func TestLakeValidation(t *testing.T) {
	tests := []struct{ name, yml, want string }{
		{"postgres", "lake:\n  catalog: postgres://db/lake\n", `lake.catalog: "postgres://db/lake" is not a catalog this version accepts: only sqlite:PATH`},
		{"rest", "lake:\n  catalog: rest+https://cat.example\n", `lake.catalog: "rest+https://cat.example" is not a catalog this version accepts`},
		{"bare path", "lake:\n  catalog: /srv/catalog.db\n", `lake.catalog: "/srv/catalog.db" is not a catalog this version accepts: only sqlite:PATH`},
		{"no path", "lake:\n  catalog: 'sqlite:'\n", "lake.catalog: sqlite: needs the catalog file's path"},
		{"namespace", "lake:\n  namespace: Billing-Lake\n", `lake.namespace: "Billing-Lake" is not a namespace`},
		{"keep_snapshots", "lake:\n  keep_snapshots: 30m\n", `lake.keep_snapshots: "30m" is not <n>d or <n>h`},
		{"keep_snapshots under an hour", "lake:\n  keep_snapshots: 0h\n", `lake.keep_snapshots: "0h" is under an hour`},
		{"orphan_age under a day", "lake:\n  orphan_age: 12h\n", `lake.orphan_age: "12h" is under a day: a file an export is writing now`},
		{"unknown key", "lake:\n  warehouse: s3://b/p\n", "lake.warehouse: unknown key; known keys in lake: namespace, catalog, keep_snapshots, orphan_age"},
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
