package main

import (
	"archive/zip"
	"bytes"
	"crypto/sha256"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/xuri/excelize/v2"

	"github.com/tally-dev/tally"
	"github.com/tally-dev/tally/fetch/sim"
	"github.com/tally-dev/tally/internal/testkit/prooftest"
)

// Security: the token never leaves the process except in the Authorization
// header to the configured origin; TLS is verified; tally query reads
// only; interface data never becomes a formula or a path; what Tally
// writes is not readable by the world.

const (
	proofFormula = `=HYPERLINK("http://x","click")`
	proofEscape  = "../../proof-escape-7c41"
)

// proofCLI runs the binary in dir and returns its exit code, standard
// output and standard error.
func proofCLI(t *testing.T, bin, dir string, env []string, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Env = env
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		return ee.ExitCode(), out.String(), errb.String()
	case err != nil:
		t.Fatalf("%s: %v", strings.Join(args, " "), err)
	}
	return 0, out.String(), errb.String()
}

// proofHostile has every JSON answer name two projects otherwise: one as a
// spreadsheet formula, one as a path out of any folder. The first attempt
// of every usage request is a 500 whose body echoes the request's
// Authorization header, as a careless proxy might.
func proofHostile(s *sim.Server, a, b string) prooftest.Rule {
	enc := func(v string) string {
		j, _ := json.Marshal(v)
		return string(j)
	}
	return func(w http.ResponseWriter, r *http.Request, q prooftest.Request) bool {
		if q.Usage && q.Attempt == 1 {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusInternalServerError)
			fmt.Fprintf(w, `{"error":{"code":"Echo","detail":"request had Authorization: %s","extraDetail":{"auth":%q}},"ref":"echo %s","status":500}`,
				r.Header.Get("Authorization"), r.Header.Get("Authorization"), r.Header.Get("Authorization"))
			return true
		}
		rec := prooftest.Record(s, r)
		body := rec.Body.String()
		if strings.Contains(rec.Header().Get("Content-Type"), "json") {
			body = strings.ReplaceAll(body, enc(a), enc(proofFormula))
			body = strings.ReplaceAll(body, enc(b), enc(proofEscape))
		}
		prooftest.Send(w, rec, []byte(body))
		return true
	}
}

func TestSecurityFullRunLeaksNothing(t *testing.T) {
	bin := tallyBinary(t)
	now := time.Now().UTC()
	start := tally.Month.Truncate(now).AddDate(0, -1, 0)
	s := sim.New(sim.Options{Token: prooftest.Token, Seed: 4, Start: start, Now: func() time.Time { return now }, PageSize: 300, UsagePaging: true})
	projects := map[string]bool{}
	for _, md := range s.Rows(tally.UsageQuery{Window: tally.Window{Start: start, End: start.AddDate(0, 1, 0), Granularity: tally.Day}}) {
		projects[md.Project] = true
	}
	names := slices.Sorted(maps.Keys(projects))
	if len(names) < 2 {
		t.Fatalf("the sim has %d projects with usage, want 2", len(names))
	}
	faults := prooftest.NewFaults(s)
	faults.Set(proofHostile(s, names[0], names[1]))
	url := prooftest.Serve(t, faults)

	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "token"), []byte(prooftest.Token+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Chmod(filepath.Join(dir, "token"), 0o644) // whatever the umask: readable by others, to be warned about
	yaml := fmt.Sprintf(`api:
  base_url: %s
  token_file: token
  max_retries: 2
usage:
  granularity: day
  start: %s
  lookback: 2d
store:
  path: data/tally.duckdb
reports:
  dir: reports
  months: [previous]
export:
  dir: exports
`, url, start.Format(tally.DateLayout))
	if err := os.WriteFile(filepath.Join(dir, "tally.yaml"), []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "data"), 0o700); err != nil {
		t.Fatal(err)
	}
	ours := map[string]bool{dir: true, filepath.Join(dir, "token"): true, filepath.Join(dir, "tally.yaml"): true, filepath.Join(dir, "data"): true}
	env := append(os.Environ(), "TALLY_API_TOKEN=")
	var said bytes.Buffer
	run := func(want int, args ...string) (string, string) {
		t.Helper()
		code, out, errs := proofCLI(t, bin, dir, env, append(args, "--log-level", "debug", "--log-format", "json")...)
		said.WriteString(out + errs)
		if code != want {
			t.Fatalf("tally %s: exit %d, want %d\n%s%s", strings.Join(args, " "), code, want, out, errs)
		}
		return out, errs
	}

	_, logs := run(0, "run", "--config", "tally.yaml")
	if !strings.Contains(logs, "readable by group or others") {
		t.Errorf("no warning about the token file others can read:\n%s", logs)
	}
	if !strings.Contains(logs, `"level":"debug"`) || !strings.Contains(logs, "retrying") {
		t.Fatalf("the run logged no debug lines or no retry; the token check would see too little:\n%s", logs)
	}
	month := start.Format("2006-01")
	run(0, "export", "--config", "tally.yaml", "--format", "focus", "--csv")
	out, _ := run(0, "query", "--config", "tally.yaml", "--format", "csv", "--csv-raw", "SELECT DISTINCT project FROM usage ORDER BY 1")
	if !strings.Contains(out, `"=HYPERLINK(""http://x"",""click"")"`) {
		t.Errorf("the renamed project did not come through the whole path:\n%s", out)
	}
	// For a spreadsheet, the formula is text (TestCSVGuardsFormulas).
	if out, _ = run(0, "query", "--config", "tally.yaml", "--format", "csv", "SELECT DISTINCT project FROM usage ORDER BY 1"); !strings.Contains(out, `"'=HYPERLINK(""http://x"",""click"")"`) {
		t.Errorf("tally query --format csv writes the formula project unguarded:\n%s", out)
	}
	run(0, "status", "--config", "tally.yaml")

	t.Run("tally query is read-only", func(t *testing.T) {
		pub := filepath.Join(dir, "data", "tally.published.duckdb")
		if err := os.Mkdir(pub+".tmp", 0o700); err != nil { // as a query that spilled left it
			t.Fatal(err)
		}
		before := proofFingerprint(t, pub)
		for _, q := range []struct{ sql, says string }{
			{"DELETE FROM usage", "read-only"},
			{"UPDATE usage SET cost = 0", "read-only"},
			{"DROP TABLE usage", "read-only"},
			{"CREATE TABLE x AS SELECT 1", "read-only"},
			{"COPY (SELECT * FROM usage) TO 'leak.csv'", "disabled by configuration"},
			{"ATTACH 'other.duckdb' AS other", "writes no file"},
			{"INSTALL httpfs", "disabled by configuration"},
			{"SET enable_external_access = true", "locked"},
			{"SELECT * FROM read_text('token')", "disabled by configuration"},
			// DuckDB allows its spill folder to a sandboxed query: spilling is off.
			{"COPY usage TO '" + pub + ".tmp/dump.csv'", "disabled by configuration"},
			{"ATTACH '" + pub + ".tmp/x.duckdb' AS x (READ_ONLY false)", "writes no file"},
			// And the database's own log path: Tally refuses the statement.
			{"COPY usage TO '" + pub + ".wal'", "writes no file"},
			{"SELECT 1; SELECT 2", "several statements"},
			{"SELECT 1; DELETE FROM usage", "several statements"},
		} {
			_, errs := run(1, "query", "--config", "tally.yaml", q.sql)
			if !strings.Contains(errs, q.says) {
				t.Errorf("%s: the error does not say %q:\n%s", q.sql, q.says, errs)
			}
		}
		_, errs := run(1, "query", "--config", "tally.yaml", "--memory-limit", "64MiB",
			"SELECT count(*) FROM (SELECT i, repeat('x', 1000) || i AS s FROM range(3000000) r(i) ORDER BY s)")
		if !strings.Contains(errs, "more memory than its limit of 64 MiB") || !strings.Contains(errs, "--memory-limit") {
			t.Errorf("a query beyond --memory-limit: the error does not name the limit:\n%s", errs)
		}
		_, errs = run(2, "query", "--config", "tally.yaml", "--memory-limit", "lots", "SELECT 1")
		if !strings.Contains(errs, `--memory-limit "lots"`) {
			t.Errorf("a bad --memory-limit: %s", errs)
		}
		if after := proofFingerprint(t, pub); after != before {
			t.Error("the published copy changed under tally query")
		}
		for _, f := range []string{"leak.csv", "other.duckdb", "data/tally.published.duckdb.tmp/dump.csv", "data/tally.published.duckdb.tmp/x.duckdb", "data/tally.published.duckdb.wal"} {
			if _, err := os.Stat(filepath.Join(dir, f)); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("tally query created %s", f)
			}
		}
	})

	t.Run("the token is nowhere", func(t *testing.T) {
		prooftest.NoToken(t, "what the commands printed", said.Bytes())
		// The echoing 500s put "Bearer <token>" in error bodies: what was
		// printed of them must be redacted.
		if n, m := bytes.Count(said.Bytes(), []byte("Bearer ")), bytes.Count(said.Bytes(), []byte("Bearer [redacted]")); n != m || n == 0 {
			t.Errorf("%d Authorization values printed, %d of them redacted", n, m)
		}
		filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				t.Fatal(err)
			}
			if d.IsDir() || path == filepath.Join(dir, "token") {
				return nil
			}
			proofFileHasNoToken(t, path)
			return nil
		})
	})

	t.Run("nothing Tally wrote is readable by the world", func(t *testing.T) {
		n := 0
		filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil || ours[path] {
				return err
			}
			fi, err := d.Info()
			if err != nil {
				t.Fatal(err)
			}
			n++
			if fi.Mode().Perm()&0o007 != 0 {
				t.Errorf("%s has mode %04o: others can read it", path, fi.Mode().Perm())
			}
			return nil
		})
		if n < 5 {
			t.Errorf("only %d files and folders checked: database, copy, workbook and exports expected", n)
		}
	})

	t.Run("project names stay text and stay inside the folder", func(t *testing.T) {
		var dirs []string
		filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, path)
			}
			return err
		})
		for _, d := range dirs {
			if _, err := os.Stat(filepath.Join(d, proofEscape)); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("a file was written at %s, out of its folder", filepath.Join(d, proofEscape))
			}
		}
		book := filepath.Join(dir, "reports", month, "tally-cost-"+month+".xlsx")
		proofNoFormulaFromData(t, book)
	})
}

// proofFingerprint is the hash of a file's bytes.
func proofFingerprint(t *testing.T, path string) [32]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return sha256.Sum256(b)
}

// proofFileHasNoToken looks for the token in a file's bytes and, where the
// bytes are compressed, in what they hold: the parts of a workbook, the
// text of a DuckDB database or a Parquet file, read back through DuckDB.
func proofFileHasNoToken(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	prooftest.NoToken(t, path, b)
	switch {
	case strings.HasSuffix(path, ".xlsx"):
		zr, err := zip.NewReader(bytes.NewReader(b), int64(len(b)))
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		for _, f := range zr.File {
			rc, err := f.Open()
			if err != nil {
				t.Fatal(err)
			}
			part, err := io.ReadAll(rc)
			rc.Close()
			if err != nil {
				t.Fatal(err)
			}
			prooftest.NoToken(t, path+"!"+f.Name, part)
		}
	case strings.HasSuffix(path, ".duckdb"):
		prooftest.WithDB(t, path, func(db *sql.DB) {
			proofNoTokenInTables(t, db, path, "")
		})
	case strings.HasSuffix(path, ".parquet"):
		db, err := sql.Open("duckdb", "")
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		if _, err := db.Exec(fmt.Sprintf(`CREATE TABLE p AS SELECT * FROM read_parquet('%s')`, strings.ReplaceAll(path, "'", "''"))); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		proofNoTokenInTables(t, db, path, "p")
	}
}

// proofNoTokenInTables searches every text column of every table (or of
// only) for the token.
func proofNoTokenInTables(t *testing.T, db *sql.DB, what, only string) {
	t.Helper()
	cols := proofTextColumns(t, db, `SELECT table_name, column_name FROM duckdb_columns()
WHERE NOT internal AND data_type IN ('VARCHAR', 'JSON') AND (? = '' OR table_name = ?)`, only, only)
	if len(cols) == 0 {
		t.Fatalf("%s: no text column to search", what)
	}
	for _, c := range cols {
		var n int
		q := fmt.Sprintf(`SELECT count(*) FROM %s WHERE contains(CAST(%s AS VARCHAR), ?)`, sqlIdent(c[0]), sqlIdent(c[1]))
		if err := db.QueryRow(q, prooftest.Token).Scan(&n); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		if n > 0 {
			t.Errorf("the token is in %s, %s.%s (%d rows)", what, c[0], c[1], n)
		}
	}
}

// proofTextColumns lists the (table, column) pairs a query over DuckDB's
// catalog selects: the text columns a secret search reads.
func proofTextColumns(t *testing.T, db *sql.DB, query string, args ...any) [][2]string {
	t.Helper()
	rows, err := db.Query(query, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var cols [][2]string
	for rows.Next() {
		var c [2]string
		if err := rows.Scan(&c[0], &c[1]); err != nil {
			t.Fatal(err)
		}
		cols = append(cols, c)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return cols
}

// sqlIdent quotes a name for SQL.
func sqlIdent(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

// proofNoFormulaFromData checks that the workbook shows the formula-like
// project name, as text, and holds no formula built from it.
func proofNoFormulaFromData(t *testing.T, book string) {
	t.Helper()
	f, err := excelize.OpenFile(book)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	found := 0
	for _, sheet := range f.GetSheetList() {
		rows, err := f.GetRows(sheet, excelize.Options{RawCellValue: true})
		if err != nil {
			t.Fatal(err)
		}
		for r, row := range rows {
			for c, v := range row {
				if v != proofFormula {
					continue
				}
				found++
				ref, _ := excelize.CoordinatesToCellName(c+1, r+1)
				if fm, err := f.GetCellFormula(sheet, ref); err != nil || fm != "" {
					t.Errorf("%s!%s holds the formula %q (%v)", sheet, ref, fm, err)
				}
				if typ, err := f.GetCellType(sheet, ref); err != nil || (typ != excelize.CellTypeSharedString && typ != excelize.CellTypeInlineString) {
					t.Errorf("%s!%s is of type %v, not text (%v)", sheet, ref, typ, err)
				}
			}
		}
	}
	if found == 0 {
		t.Fatalf("%s never shows the project %q: the check saw nothing", book, proofFormula)
	}
	// And in the file itself: no <f> element anywhere mentions it.
	zr, err := zip.OpenReader(book)
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	fEl := regexp.MustCompile(`<f[ >][^<]*`)
	for _, part := range zr.File {
		rc, err := part.Open()
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(rc)
		rc.Close()
		for _, m := range fEl.FindAll(b, -1) {
			if bytes.Contains(m, []byte("HYPERLINK")) {
				t.Errorf("%s: %s holds a formula from interface data: %s", book, part.Name, m)
			}
		}
	}
}
