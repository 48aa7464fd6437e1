package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/tally-dev/tally"
	"github.com/tally-dev/tally/fetch/sim"
	"github.com/tally-dev/tally/store"
)

// Bad input on the command line, in the config, the token and the database
// path: each gets exit 2 (1 for an I/O failure), a message naming what is
// wrong and what to do, and leaves an existing database as it was.

const badToken = "bad-input-tok-3f9a1c7e5b2d4068"

// badCLI runs the command line in-process, as main does, and returns the
// exit code and everything written to standard error (the "tally: …" line
// and the logs).
func badCLI(t *testing.T, args ...string) (int, string) {
	t.Helper()
	f, err := os.CreateTemp(t.TempDir(), "stderr")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	stderr := os.Stderr
	os.Stderr = f
	defer func() { os.Stderr = stderr }()
	started := false
	root := newRootCmd(&started)
	root.SetOut(&bytes.Buffer{})
	root.SetErr(f)
	root.SetArgs(args)
	err = root.ExecuteContext(context.Background())
	if err != nil && !started {
		var ue usageError
		if !errors.As(err, &ue) {
			err = usageError{err}
		}
	}
	code := exitCode(err)
	os.Stderr = stderr
	b, rerr := os.ReadFile(f.Name())
	if rerr != nil {
		t.Fatal(rerr)
	}
	return code, string(b)
}

// badSetup is a folder holding a config and a database fetched from a sim,
// with its analysts' copy.
type badSetup struct {
	dir, cfg, db string
	base         string
}

func newBadSetup(t *testing.T) *badSetup {
	t.Helper()
	now := time.Now().UTC()
	start := tally.Day.Truncate(now).AddDate(0, 0, -20)
	srv := httptest.NewServer(sim.New(sim.Options{Token: badToken, Seed: 2, Start: start, Now: func() time.Time { return now }}))
	t.Cleanup(srv.Close)
	b := &badSetup{dir: t.TempDir(), base: srv.URL}
	b.cfg = b.config(t, "tally.yaml", "", "data/tally.duckdb")
	b.db = filepath.Join(b.dir, "data", "tally.duckdb")
	if err := os.Mkdir(filepath.Join(b.dir, "data"), 0o700); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TALLY_API_TOKEN", badToken)
	t.Setenv("TALLY_DB", "")
	t.Setenv("TALLY_BASE_URL", "")
	if code, msg := badCLI(t, "fetch", "--config", b.cfg); code != 0 {
		t.Fatalf("the first fetch: exit %d\n%s", code, msg)
	}
	return b
}

// config writes a config file named name with extra api lines and the
// store path given, and returns its path.
func (b *badSetup) config(t *testing.T, name, api, storePath string) string {
	t.Helper()
	yaml := fmt.Sprintf("api:\n  base_url: %s\n  max_retries: 0\n%susage:\n  granularity: day\n  start: %s\n  lookback: 1d\nstore:\n  path: %s\n",
		b.base, api, tally.Day.Truncate(time.Now().UTC()).AddDate(0, 0, -20).Format(tally.DateLayout), storePath)
	path := filepath.Join(b.dir, name)
	if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	// Readable by the other user of TestBadInputPermissions, whatever the
	// umask (store.Open narrows the process's).
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// badState is what must not change: each file's bytes and time.
type badState map[string]string

func badSnapshot(t *testing.T, paths ...string) badState {
	t.Helper()
	s := badState{}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		s[p] = fmt.Sprintf("%x %s %v", sha256.Sum256(b), fi.ModTime().UTC().Format(time.RFC3339Nano), fi.Mode())
	}
	return s
}

func (s badState) same(t *testing.T, label string) {
	t.Helper()
	for p, was := range s {
		if now := badSnapshot(t, p)[p]; now != was {
			t.Errorf("%s: %s changed", label, p)
		}
	}
}

func TestBadInputLeavesTheDatabaseAlone(t *testing.T) {
	b := newBadSetup(t)
	pub := filepath.Join(b.dir, "data", "tally.published.duckdb")
	notDuck := filepath.Join(b.dir, "notes.duckdb")
	if err := os.WriteFile(notDuck, []byte("date,cost\n2026-01-01,1.5\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(b.dir, "folder-token"), 0o700); err != nil {
		t.Fatal(err)
	}
	cfgs := map[string]string{
		"token missing":   b.config(t, "token-missing.yaml", "  token_file: nope.txt\n", "data/tally.duckdb"),
		"token is folder": b.config(t, "token-folder.yaml", "  token_file: folder-token\n", "data/tally.duckdb"),
		"no folder":       b.config(t, "no-folder.yaml", "", "nowhere/deeper/tally.duckdb"),
		"not duckdb":      b.config(t, "not-duckdb.yaml", "", "notes.duckdb"),
		"unknown key":     writeBadConfig(t, b.dir, "typo.yaml", "usage:\n  granularty: day\n"),
		"bad granularity": writeBadConfig(t, b.dir, "gran.yaml", "usage:\n  granularity: minute\n"),
	}
	state := badSnapshot(t, b.db, pub, notDuck)

	cases := []struct {
		name string
		args []string
		env  map[string]string
		code int
		says []string
	}{
		{"a month that does not exist", []string{"fetch", "--config", b.cfg, "--from", "2026-13-01"}, nil, 2,
			[]string{"--from", `"2026-13-01"`, "YYYY-MM-DD"}},
		{"a day that does not exist", []string{"fetch", "--config", b.cfg, "--to", "2026-02-30"}, nil, 2,
			[]string{"--to", `"2026-02-30"`, "YYYY-MM-DD"}},
		{"a date in another form", []string{"plan", "--config", b.cfg, "--from", "02/01/2026"}, nil, 2,
			[]string{"--from", `"02/01/2026"`, "YYYY-MM-DD"}},
		{"to before from", []string{"fetch", "--config", b.cfg, "--from", "2026-03-01", "--to", "2026-02-01"}, nil, 2,
			[]string{"--to 2026-02-01 must be after --from 2026-03-01"}},
		{"an unknown granularity", []string{"fetch", "--config", b.cfg, "--granularity", "minute"}, nil, 2,
			[]string{"--granularity", "minute"}},
		{"an export date that does not exist", []string{"export", "--config", b.cfg, "--from", "2026-02-29"}, nil, 2,
			[]string{"--from", `"2026-02-29"`}},
		{"a report month that does not exist", []string{"report", "--config", b.cfg, "--month", "2026-13"}, nil, 2,
			[]string{"--month", `"2026-13"`, "YYYY-MM"}},
		{"a report month without its zero", []string{"report", "--config", b.cfg, "--month", "2026-1"}, nil, 2,
			[]string{"--month", `"2026-1"`, "YYYY-MM"}},
		{"no report month", []string{"report", "--config", b.cfg}, nil, 2,
			[]string{"--month is required", "YYYY-MM"}},
		{"an argument too many", []string{"run", "--config", b.cfg, "now"}, nil, 2,
			[]string{"unknown command", "now"}},
		{"no config", []string{"fetch"}, nil, 2,
			[]string{"--config is required"}},
		{"a config that is not there", []string{"fetch", "--config", filepath.Join(b.dir, "nope.yaml")}, nil, 2,
			[]string{"nope.yaml", "no such file", "configs/tally.example.yaml"}},
		{"a config key misspelt", []string{"fetch", "--config", cfgs["unknown key"]}, nil, 2,
			[]string{"usage.granularty", "granularity"}},
		{"a config value not allowed", []string{"fetch", "--config", cfgs["bad granularity"]}, nil, 2,
			[]string{"usage.granularity", "minute", "hour, day, week, month"}},
		{"no token in the environment", []string{"fetch", "--config", b.cfg}, map[string]string{"TALLY_API_TOKEN": ""}, 2,
			[]string{"TALLY_API_TOKEN", "not set", "export the token"}},
		{"a token file that is not there", []string{"fetch", "--config", cfgs["token missing"]}, nil, 2,
			[]string{"nope.txt", "no such file", "put the token in that file"}},
		{"a token file that cannot be read", []string{"fetch", "--config", cfgs["token is folder"]}, nil, 2,
			[]string{"folder-token", "is a directory", "readable file holding the token"}},
		{"a database two folders below any that exists", []string{"fetch", "--config", cfgs["no folder"]}, nil, 2,
			[]string{"nowhere", "does not exist", "mkdir -p"}},
		{"a database two folders below any that exists, by TALLY_DB", []string{"run", "--config", b.cfg},
			map[string]string{"TALLY_DB": filepath.Join(b.dir, "gone", "deeper", "x.duckdb")}, 2,
			[]string{"gone", "does not exist", "mkdir -p"}},
		{"a database file that is not DuckDB", []string{"fetch", "--config", cfgs["not duckdb"]}, nil, 2,
			[]string{"notes.duckdb", "not a DuckDB database", "left untouched", "store.path"}},
		{"a query on a file that is not DuckDB", []string{"query", "--db", notDuck, "SELECT 1"}, nil, 2,
			[]string{"notes.duckdb", "not a DuckDB database"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for k, v := range c.env {
				t.Setenv(k, v)
			}
			code, msg := badCLI(t, c.args...)
			if code != c.code {
				t.Errorf("exit %d, want %d:\n%s", code, c.code, msg)
			}
			for _, s := range c.says {
				if !strings.Contains(msg, s) {
					t.Errorf("the message does not say %q:\n%s", s, msg)
				}
			}
			if strings.Contains(msg, badToken) {
				t.Errorf("the message holds the token:\n%s", msg)
			}
			state.same(t, c.name)
		})
	}
	for _, f := range []string{filepath.Join(b.dir, "notes.duckdb.lock"), filepath.Join(b.dir, "nowhere")} {
		if _, err := os.Stat(f); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("bad input created %s", f)
		}
	}
}

func writeBadConfig(t *testing.T, dir, name, yaml string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestBadInputPermissions runs the built binary as a user that may not
// read the token file or write the database's folder: nobody when the
// test runs as root (root passes every permission check), the test's own
// user otherwise.
func TestBadInputPermissions(t *testing.T) {
	b := newBadSetup(t)
	bin := tallyBinary(t)
	asRoot := os.Geteuid() == 0
	// The other user must reach the binary, the configs and the folders
	// (the umask is narrow since the setup opened a store).
	for _, d := range []string{bin, filepath.Dir(bin), filepath.Dir(filepath.Dir(bin)), b.dir, filepath.Dir(b.dir)} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	give := func(path string) {
		if asRoot {
			if err := os.Chown(path, 65534, 65534); err != nil {
				t.Fatal(err)
			}
		}
	}
	// A read-only folder holding a database and its copy.
	ro := filepath.Join(b.dir, "ro")
	if err := os.Mkdir(ro, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"tally.duckdb", "tally.published.duckdb"} {
		data, err := os.ReadFile(filepath.Join(b.dir, "data", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(ro, f), data, 0o600); err != nil {
			t.Fatal(err)
		}
		give(filepath.Join(ro, f))
	}
	give(ro)
	if err := os.Chmod(ro, 0o555); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(ro, 0o755) })
	roCfg := b.config(t, "ro.yaml", "", "ro/tally.duckdb")
	// A token file the user may not read.
	secret := filepath.Join(b.dir, "secret-token")
	if err := os.WriteFile(secret, []byte(badToken), 0o600); err != nil {
		t.Fatal(err)
	}
	if !asRoot {
		if err := os.Chmod(secret, 0o000); err != nil {
			t.Fatal(err)
		}
	}
	secretCfg := b.config(t, "secret.yaml", "  token_file: secret-token\n", "ro/tally.duckdb")
	state := badSnapshot(t, filepath.Join(ro, "tally.duckdb"), filepath.Join(ro, "tally.published.duckdb"))

	run := func(t *testing.T, args ...string) (int, string) {
		t.Helper()
		cmd := exec.Command(bin, args...)
		cmd.Dir = b.dir
		cmd.Env = append(os.Environ(), "TALLY_API_TOKEN="+badToken, "HOME="+b.dir)
		if asRoot {
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		}
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode(), string(out)
		}
		if err != nil {
			t.Fatal(err)
		}
		return 0, string(out)
	}
	for _, c := range []struct {
		name string
		args []string
		code int
		says []string
	}{
		{"a database in a read-only folder", []string{"fetch", "--config", roCfg}, 1,
			[]string{"ro", "not writable", "permission denied", "give the user write access or point store.path elsewhere"}},
		{"a token file the user cannot read", []string{"fetch", "--config", secretCfg}, 2,
			[]string{"secret-token", "permission denied", "put the token in that file"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, msg := run(t, c.args...)
			if code != c.code {
				t.Errorf("exit %d, want %d:\n%s", code, c.code, msg)
			}
			for _, s := range c.says {
				if !strings.Contains(msg, s) {
					t.Errorf("the message does not say %q:\n%s", s, msg)
				}
			}
			state.same(t, c.name)
			if _, err := os.Stat(filepath.Join(ro, "tally.duckdb.lock")); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("a lock file was made in the read-only folder")
			}
		})
	}
	// The same user may still read the read-only folder's copy.
	if code, msg := run(t, "query", "--db", filepath.Join(ro, "tally.published.duckdb"), "SELECT count(*) FROM usage"); code != 0 {
		t.Errorf("query of the read-only folder's copy: exit %d\n%s", code, msg)
	}
}

// TestPartialFetchExitsThreeNamingWindows: a window the interface keeps
// refusing with 503 makes tally fetch exit 3, naming that window; the
// others are loaded, and the next run loads it.
func TestPartialFetchExitsThreeNamingWindows(t *testing.T) {
	now := time.Now().UTC()
	start := tally.Day.Truncate(now).AddDate(0, 0, -21)
	bad := tally.Window{Start: start.AddDate(0, 0, 7), End: start.AddDate(0, 0, 14), Granularity: tally.Day}
	s := sim.New(sim.Options{Token: badToken, Seed: 2, Start: start, Now: func() time.Time { return now }})
	var failing atomic.Bool
	failing.Store(true)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		if failing.Load() && strings.Contains(string(body), `"startDate":"`+bad.Start.Format(tally.DateLayout)+`"`) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusServiceUnavailable)
			io.WriteString(w, `{"error":{"code":"ServiceUnavailable","detail":"down for maintenance"},"ref":"r-42","status":503}`)
			return
		}
		s.ServeHTTP(w, r)
	}))
	defer srv.Close()
	dir := t.TempDir()
	cfg := writeBadConfig(t, dir, "tally.yaml", fmt.Sprintf(
		"api:\n  base_url: %s\n  max_retries: 0\nusage:\n  granularity: day\n  start: %s\n  window: 7d\nstore:\n  path: tally.duckdb\n",
		srv.URL, start.Format(tally.DateLayout)))
	t.Setenv("TALLY_API_TOKEN", badToken)
	t.Setenv("TALLY_DB", "")
	t.Setenv("TALLY_BASE_URL", "")

	code, msg := badCLI(t, "fetch", "--config", cfg)
	if code != 3 {
		t.Fatalf("exit %d, want 3:\n%s", code, msg)
	}
	for _, want := range []string{"1 window(s) failed", bad.String(), "503", "down for maintenance", "ref r-42", "the next run fetches these again"} {
		if !strings.Contains(msg, want) {
			t.Errorf("the message does not say %q:\n%s", want, msg)
		}
	}
	failing.Store(false)
	if code, msg := badCLI(t, "fetch", "--config", cfg); code != 0 {
		t.Fatalf("the next run: exit %d\n%s", code, msg)
	}
	st, err := store.Open(context.Background(), filepath.Join(dir, "tally.duckdb"), store.ReadOnly())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var n int
	if err := st.DB().QueryRow(`SELECT count(*) FROM fetch_windows WHERE start <= ? AND "end" >= ?`, bad.Start, bad.End).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 1 {
		t.Errorf("after the next run the ledger holds %d entries covering %s, want 1", n, bad)
	}
}
