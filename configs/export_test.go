package configs

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
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
			for _, key := range []string{"sekrit-4b1d", "sekrit-9c2e", "AKIA9", "AKIA7"} {
				if strings.Contains(err.Error(), key) {
					t.Errorf("error %q repeats the key %s written into a URL", err, key)
				}
			}
		})
	}
}

// TestLakeS3: lake.warehouse s3://BUCKET[/PREFIX] with lake.s3's keys,
// their defaults, and the S3 keys read from their variables or files,
// checked up front by a job exporting to the lake, and redacted.
func TestLakeS3(t *testing.T) {
	cfg := mustParse(t, minimal+"lake:\n  warehouse: s3://finance-lake/tally/prod/\n", noEnv)
	if want := (LakeConfig{Namespace: DefaultLakeNamespace, Warehouse: "s3://finance-lake/tally/prod", S3: LakeS3{Region: DefaultS3Region},
		KeepSnapshots: DefaultKeepSnapshots, OrphanAge: DefaultOrphanAge}); cfg.Lake != want || !cfg.Lake.OnS3() {
		t.Errorf("lake = %+v, want %+v", cfg.Lake, want)
	}
	cfg = mustParse(t, minimal+"export:\n  format: iceberg\nlake:\n  catalog: postgres://tally@db/lake\n  warehouse: s3://lake\n  s3:\n"+
		"    endpoint: http://127.0.0.1:7070/\n    region: eu-central-1\n    path_style: true\n    access_key_env: TALLY_TEST_S3_AK\n    secret_key_file: secrets/s3\n", noEnv)
	if want := (LakeS3{Endpoint: "http://127.0.0.1:7070", Region: "eu-central-1", PathStyle: true, AccessKeyEnv: "TALLY_TEST_S3_AK", SecretKeyFile: "/etc/tally/secrets/s3"}); cfg.Lake.S3 != want || cfg.Lake.Warehouse != "s3://lake" {
		t.Errorf("lake.s3 = %+v (warehouse %q), want %+v", cfg.Lake.S3, cfg.Lake.Warehouse, want)
	}
	if cfg := mustParse(t, minimal+"lake:\n  warehouse: /srv/w\n", noEnv); cfg.Lake.OnS3() || cfg.Lake.S3 != (LakeS3{}) {
		t.Errorf("a folder's lake.s3 = %+v", cfg.Lake.S3)
	}

	dir := t.TempDir()
	skFile := filepath.Join(dir, "sk")
	yml := minimal + "export:\n  format: iceberg\nlake:\n  warehouse: s3://lake\n  s3:\n    access_key_env: TALLY_TEST_S3_AK\n    secret_key_file: " + skFile + "\n"
	cfg = mustParse(t, yml, noEnv)
	env := func(k string) string {
		if k == "TALLY_TEST_S3_AK" {
			return "AKIAS3TESTKEY41"
		}
		return ""
	}
	want := "lake.s3.secret_key_file: open " + skFile + ": no such file or directory; put the S3 secret access key in that file (mode 600)"
	if err := cfg.CheckSecrets(env, []string{"fetch", "export"}); err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("a job exporting to S3 without its secret key: %v; want %q", err, want)
	}
	if err := cfg.CheckSecrets(env, []string{"fetch"}); err != nil {
		t.Fatalf("a job without export needs no S3 keys: %v", err)
	}
	want = "lake.s3.access_key_env: the environment variable TALLY_TEST_S3_AK is not set or empty; export the S3 access key id in it, or point lake.s3.access_key_file at a file holding it"
	if err := cfg.Lake.CheckSecrets(noEnv); err == nil || err.Error() != want {
		t.Fatalf("no access key: %v; want %q", err, want)
	}
	if err := os.WriteFile(skFile, []byte("s3-secret-key-6e0f\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ak, sk, err := cfg.Lake.S3Keys(env)
	if err != nil || ak.Reveal() != "AKIAS3TESTKEY41" || sk.Reveal() != "s3-secret-key-6e0f" || fmt.Sprint(ak, sk) != secret.Mask+" "+secret.Mask {
		t.Fatalf("keys %q %q (%v), printed %q", ak.Reveal(), sk.Reveal(), err, fmt.Sprint(ak, sk))
	}
	if err := cfg.CheckSecrets(env, []string{"export"}); err != nil {
		t.Fatal(err)
	}
	// Load registers them: any line that echoes one is redacted.
	path := filepath.Join(dir, "tally.yaml")
	if err := os.WriteFile(path, []byte(yml), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(path, func(k string) string {
		if k == "TALLY_TEST_S3_AK" {
			return "AKIAS3LOADKEY42"
		}
		return ""
	}); err != nil {
		t.Fatal(err)
	}
	if got := secret.Redact("denied for AKIAS3LOADKEY42 signed with s3-secret-key-6e0f"); strings.Contains(got, "AKIAS3LOADKEY42") || strings.Contains(got, "s3-secret-key-6e0f") {
		t.Fatalf("the S3 keys are not redacted: %s", got)
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
		{"other scheme", "lake:\n  warehouse: gs://b/p\n", `lake.warehouse: "gs://b/p" is neither a folder nor s3://BUCKET[/PREFIX]`},
		{"s3 bucket", "lake:\n  warehouse: s3://Finance_Lake/p\n", `lake.warehouse: "s3://Finance_Lake/p" names no bucket S3 allows: give s3://BUCKET[/PREFIX], e.g. s3://finance-lake/tally`},
		{"s3 no bucket", "lake:\n  warehouse: s3://\n", `lake.warehouse: "s3://" names no bucket S3 allows`},
		{"s3 prefix", "lake:\n  warehouse: s3://lake/a//b\n", `lake.warehouse: "s3://lake/a//b" has a prefix S3 keys would not hold as written`},
		{"s3 dot prefix", "lake:\n  warehouse: s3://lake/a/../b\n", `lake.warehouse: "s3://lake/a/../b" has a prefix S3 keys would not hold as written`},
		{"s3 user", "lake:\n  warehouse: s3://AKIA9:sekrit-4b1d@lake/p\n", `lake.warehouse: holds @, ?, # or %: give s3://BUCKET[/PREFIX]`},
		{"s3 keys without s3", "lake:\n  warehouse: /srv/w\n  s3:\n    region: eu-west-1\n", "lake.s3.region: is set but lake.warehouse is not s3://BUCKET[/PREFIX]: lake.s3 says how to reach a warehouse on S3; leave it out for a folder (line 6)"},
		{"s3 not a mapping", "lake:\n  warehouse: s3://lake\n  s3: minio\n", "lake.s3: must be a mapping with keys endpoint, region, path_style, access_key_env, access_key_file, secret_key_env, secret_key_file, not"},
		{"s3 unknown key", "lake:\n  warehouse: s3://lake\n  s3:\n    access_key: AKIA\n", "lake.s3.access_key: unknown key; known keys in lake.s3: endpoint, region, path_style, access_key_env, access_key_file, secret_key_env, secret_key_file (line 6)"},
		{"s3 endpoint http", "lake:\n  warehouse: s3://lake\n  s3:\n    endpoint: http://minio.internal:9000\n", `lake.s3.endpoint: "http://minio.internal:9000" uses http to a host that is not loopback (127.0.0.0/8, ::1, localhost), so the lake's data would cross the network in clear: use an https:// address`},
		{"s3 endpoint scheme", "lake:\n  warehouse: s3://lake\n  s3:\n    endpoint: s3.example.com\n", `lake.s3.endpoint: "s3.example.com" has no host: use an https:// address`},
		{"s3 endpoint path", "lake:\n  warehouse: s3://lake\n  s3:\n    endpoint: https://s3.example.com/lake\n", `lake.s3.endpoint: "https://s3.example.com/lake" has a path, query or fragment: give the service's address alone`},
		{"s3 endpoint user", "lake:\n  warehouse: s3://lake\n  s3:\n    endpoint: https://AKIA7:sekrit-9c2e@s3.example.com\n", "lake.s3.endpoint: holds a user or password: the keys come from lake.s3.access_key_env|file and secret_key_env|file, never the YAML"},
		{"s3 endpoint empty", "lake:\n  warehouse: s3://lake\n  s3:\n    endpoint: ''\n", `lake.s3.endpoint: "" is empty; leave the key out for AWS's endpoint of lake.s3.region`},
		{"s3 region", "lake:\n  warehouse: s3://lake\n  s3:\n    region: EU West\n", `lake.s3.region: "EU West" is not a region: lower-case letters, digits and -, e.g. eu-central-1 (default us-east-1)`},
		{"s3 path_style", "lake:\n  warehouse: s3://lake\n  s3:\n    path_style: path\n", `lake.s3.path_style: "path" is not true or false`},
		{"s3 access both", "lake:\n  warehouse: s3://lake\n  s3:\n    access_key_env: AK\n    access_key_file: /ak\n    secret_key_env: SK\n", "lake.s3.access_key_env and access_key_file: set one, not both"},
		{"s3 access env name", "lake:\n  warehouse: s3://lake\n  s3:\n    access_key_env: AKIAEXAMPLE/1\n    secret_key_env: SK\n", `lake.s3.access_key_env: "AKIAEXAMPLE/1" is not an environment variable name`},
		{"s3 secret missing", "lake:\n  warehouse: s3://lake\n  s3:\n    access_key_env: AK\n", "lake.s3.secret_key_env: missing: lake.s3.access_key_env or access_key_file is set, so give the secret key too, in secret_key_env or secret_key_file"},
		{"s3 access missing", "lake:\n  warehouse: s3://lake\n  s3:\n    secret_key_file: /sk\n", "lake.s3.access_key_env: missing: lake.s3.secret_key_env or secret_key_file is set, so give the access key id too, in access_key_env or access_key_file"},
		{"no path", "lake:\n  catalog: 'sqlite:'\n", "lake.catalog: sqlite: needs the catalog file's path"},
		{"namespace", "lake:\n  namespace: Billing-Lake\n", `lake.namespace: "Billing-Lake" is not a namespace`},
		{"keep_snapshots", "lake:\n  keep_snapshots: 30m\n", `lake.keep_snapshots: "30m" is not <n>d or <n>h`},
		{"keep_snapshots under an hour", "lake:\n  keep_snapshots: 0h\n", `lake.keep_snapshots: "0h" is under an hour`},
		{"orphan_age under a day", "lake:\n  orphan_age: 12h\n", `lake.orphan_age: "12h" is under a day: a file an export is writing now`},
		{"unknown key", "lake:\n  wharehouse: /srv/w\n", "lake.wharehouse: unknown key; known keys in lake: namespace, catalog, warehouse, password_env, password_file, s3, keep_snapshots, orphan_age; did you mean warehouse?"},
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
