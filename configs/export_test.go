package configs

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tally-dev/tally/internal/secret"
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
	cfg = mustParse(t, minimal+"lake:\n  catalog: postgres://tally@catalog.internal:5433/lake?sslmode=verify-full\n  password_file: secrets/lake\n  warehouse: /mnt/lake\n", noEnv)
	if want := (LakeConfig{Namespace: DefaultLakeNamespace, Postgres: "postgres://tally@catalog.internal:5433/lake?sslmode=verify-full", PasswordFile: "/etc/tally/secrets/lake",
		Warehouse: "/mnt/lake", KeepSnapshots: DefaultKeepSnapshots, OrphanAge: DefaultOrphanAge}); cfg.Lake != want {
		t.Errorf("lake = %+v, want %+v", cfg.Lake, want)
	}
}

// TestLakePassword: the PostgreSQL catalog's password comes from its
// variable or file, a run whose export commits to the lake checks it is
// there before it starts, and it is redacted wherever a peer echoes it.
func TestLakePassword(t *testing.T) {
	cfg := mustParse(t, minimal+"export:\n  format: iceberg\nlake:\n  catalog: postgres://tally@db/lake\n  password_env: TALLY_TEST_LAKE_PW\n", noEnv)
	env := func(v string) func(string) string {
		return func(k string) string {
			if k == "TALLY_TEST_LAKE_PW" {
				return v
			}
			return ""
		}
	}
	want := "lake.password_env: the environment variable TALLY_TEST_LAKE_PW is not set or empty; export the catalog database's password in it, or point lake.password_file at a file holding it"
	if err := cfg.CheckSecrets(env(""), []string{"fetch", "export"}); err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("a job exporting to the lake without its password: %v; want %q", err, want)
	}
	if err := cfg.CheckSecrets(env(""), []string{"fetch", "report"}); err != nil {
		t.Fatalf("a job without export needs no lake password: %v", err)
	}
	pw, err := cfg.Lake.Password(env("lake-pw-9f3a"))
	if err != nil || pw.Reveal() != "lake-pw-9f3a" || fmt.Sprint(pw) != secret.Mask {
		t.Fatalf("password %q (%v), printed %q", pw.Reveal(), err, fmt.Sprint(pw))
	}
	if got := secret.Redact("auth failed for lake-pw-9f3a"); strings.Contains(got, "lake-pw-9f3a") {
		t.Fatalf("the lake password is not redacted: %s", got)
	}
}

func TestLakeValidation(t *testing.T) {
	tests := []struct{ name, yml, want string }{
		{"postgres password", "lake:\n  catalog: postgres://tally:hunter2-lake@db/lake\n", `lake.catalog: "postgres://tally:xxxxx@db/lake" holds a password: the password is never in the YAML; set lake.password_env or lake.password_file`},
		{"postgres no database", "lake:\n  catalog: postgres://tally@db\n", `lake.catalog: "postgres://tally@db" names no database`},
		{"postgres no host", "lake:\n  catalog: postgres:///lake\n", `lake.catalog: "postgres:///lake" names no host`},
		{"postgres both", "lake:\n  catalog: postgres://tally@db/lake\n  password_env: PW\n  password_file: /pw\n", "lake.password_env and password_file: set one, not both"},
		{"password env name", "lake:\n  catalog: postgres://tally@db/lake\n  password_env: A-B\n", `lake.password_env: "A-B" is not an environment variable name`},
		{"password for sqlite", "lake:\n  catalog: sqlite:/srv/c.db\n  password_env: PW\n", "lake.catalog: is a SQLite file but lake.password_env or password_file is set"},
		{"password without catalog", "lake:\n  password_env: PW\n", "lake.catalog: is not set but lake.password_env or password_file is"},
		{"rest", "lake:\n  catalog: rest+https://cat.example\n", `lake.catalog: "rest+https://cat.example" is not a catalog this version accepts: sqlite:PATH (an embedded SQLite file) or postgres://USER@HOST[:PORT]/DATABASE`},
		{"bare path", "lake:\n  catalog: /srv/catalog.db\n", `lake.catalog: "/srv/catalog.db" is not a catalog this version accepts`},
		{"s3 warehouse", "lake:\n  warehouse: s3://b/p\n", `lake.warehouse: "s3://b/p" is not a folder`},
		{"no path", "lake:\n  catalog: 'sqlite:'\n", "lake.catalog: sqlite: needs the catalog file's path"},
		{"namespace", "lake:\n  namespace: Billing-Lake\n", `lake.namespace: "Billing-Lake" is not a namespace`},
		{"keep_snapshots", "lake:\n  keep_snapshots: 30m\n", `lake.keep_snapshots: "30m" is not <n>d or <n>h`},
		{"keep_snapshots under an hour", "lake:\n  keep_snapshots: 0h\n", `lake.keep_snapshots: "0h" is under an hour`},
		{"orphan_age under a day", "lake:\n  orphan_age: 12h\n", `lake.orphan_age: "12h" is under a day: a file an export is writing now`},
		{"unknown key", "lake:\n  wharehouse: /srv/w\n", "lake.wharehouse: unknown key; known keys in lake: namespace, catalog, warehouse, password_env, password_file, keep_snapshots, orphan_age; did you mean warehouse?"},
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
