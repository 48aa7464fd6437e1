package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/xuri/excelize/v2"

	"github.com/tally-dev/tally/internal/prooftest"
	"github.com/tally-dev/tally/job"
)

// hostileName is what a project member may name a payment method in the
// interface: a formula, which a spreadsheet runs when a CSV cell begins
// with it.
const hostileName = "=SUM(1,1) Marketplace A"

// TestCSVGuardsFormulas: the simulated interface names a payment method
// "=SUM(1,1) Marketplace A" (its answers rewritten on the way, as a
// project member would rename it). tally query --format csv and the FOCUS
// CSV of tally export write it as '=SUM(1,1) Marketplace A, numbers
// (negative ones too) as they are; --csv-raw writes it as it is; --csv
// writes every FOCUS dataset as CSV, Contract Commitment included; and
// LibreOffice, opening the CSVs, holds the guarded name as text and the
// numbers as numbers, while it takes the raw name for a formula.
func TestCSVGuardsFormulas(t *testing.T) {
	start := prooftest.Day(t, "2026-09-01")
	s := newCLISim(t, start)
	renamed := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := httptest.NewRecorder()
		s.sim.ServeHTTP(rec, r)
		body := bytes.ReplaceAll(rec.Body.Bytes(), []byte("Marketplace A subscription"), []byte(hostileName))
		for k, v := range rec.Header() {
			if k != "Content-Length" {
				w.Header()[k] = v
			}
		}
		w.WriteHeader(rec.Code)
		w.Write(body)
	}))
	t.Cleanup(renamed.Close)
	s.url = renamed.URL
	exports := t.TempDir()
	cfg, _ := cliConfig(t, s, start, "export:\n  format: focus\n")
	if out, code, stderr := cli(t, "fetch", "--config", cfg, "--from", "2026-09-01", "--to", "2026-11-01"); code != job.ExitOK {
		t.Fatalf("fetch: exit %d\n%s\n%s", code, out, stderr)
	}
	files := t.TempDir() // the CSVs LibreOffice opens
	keep := func(name string, b []byte) string {
		p := filepath.Join(files, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}

	// tally query: the name as text, guarded; the negated cost a number.
	const sql = `SELECT payment_method_name, currency, -sum(cost) AS negated_cost FROM usage GROUP BY ALL ORDER BY ALL`
	query := func(raw bool) [][]string {
		args := []string{"query", "--config", cfg, "--format", "csv", sql}
		if raw {
			args = append(args, "--csv-raw")
		}
		out, code, stderr := cli(t, args...)
		if code != job.ExitOK {
			t.Fatalf("query (raw %v): exit %d\n%s", raw, code, stderr)
		}
		keep(map[bool]string{false: "query.csv", true: "query-raw.csv"}[raw], []byte(out))
		return readCSV(t, []byte(out))
	}
	guarded, raw := query(false), query(true)
	names := func(recs [][]string) []string {
		var n []string
		for _, r := range recs[1:] {
			n = append(n, r[0])
		}
		return n
	}
	if !slices.Contains(names(guarded), "'"+hostileName) || slices.Contains(names(guarded), hostileName) {
		t.Fatalf("query --format csv writes the payment methods %q, want %q guarded", names(guarded), hostileName)
	}
	if !slices.Contains(names(raw), hostileName) {
		t.Fatalf("query --format csv --csv-raw writes the payment methods %q, want %q as it is", names(raw), hostileName)
	}
	for i, r := range guarded[1:] {
		if !strings.HasPrefix(r[2], "-") || r[2] != raw[1+i][2] {
			t.Fatalf("query --format csv writes the negated cost %q (raw %q): a number must stay as it is", r[2], raw[1+i][2])
		}
	}

	// tally export --format focus --csv: every dataset as CSV, the name
	// guarded where it is text, no number touched.
	keptFocus := false
	focusCSV := func(raw bool) (cu, cc [][]string) {
		dir := filepath.Join(exports, map[bool]string{false: "guarded", true: "raw"}[raw])
		args := []string{"export", "--config", cfg, "--format", "focus", "--csv", "--to", dir}
		if raw {
			args = append(args, "--csv-raw")
		}
		if out, code, stderr := cli(t, args...); code != job.ExitOK {
			t.Fatalf("export (raw %v): exit %d\n%s\n%s", raw, code, out, stderr)
		}
		read := func(dataset string) [][]string {
			paths, err := filepath.Glob(filepath.Join(dir, dataset, "*=*", "*.csv"))
			if err != nil || len(paths) == 0 {
				t.Fatalf("export --csv (raw %v) wrote no %s CSV: %v", raw, dataset, err)
			}
			var all [][]string
			for _, p := range paths {
				b, err := os.ReadFile(p)
				if err != nil {
					t.Fatal(err)
				}
				recs := readCSV(t, b)
				if all == nil {
					all = recs[:1]
				}
				all = append(all, recs[1:]...)
				if !raw && dataset == "focus_csv" && !keptFocus && strings.Contains(string(b), hostileName) {
					keep("focus.csv", b)
					keptFocus = true
				}
			}
			return all
		}
		return read("focus_csv"), read("focus_contract_commitment_csv")
	}
	for _, raw := range []bool{false, true} {
		cu, cc := focusCSV(raw)
		want := "'" + hostileName
		if raw {
			want = hostileName
		}
		for name, recs := range map[string][][]string{"Cost and Usage": cu, "Contract Commitment": cc} {
			col := slices.Index(recs[0], "x_PaymentMethodName")
			if col < 0 {
				t.Fatalf("%s CSV has no x_PaymentMethodName: %v", name, recs[0])
			}
			found := 0
			for _, r := range recs[1:] {
				if strings.Contains(r[col], hostileName) {
					found++
					if r[col] != want {
						t.Fatalf("%s CSV (raw %v) writes the payment method %q, want %q", name, raw, r[col], want)
					}
				}
				// No other cell is guarded: the only text with a
				// formula's lead is the name, and numbers stay numbers.
				for i, v := range r {
					if strings.HasPrefix(v, "'") && v != "'"+hostileName {
						t.Fatalf("%s CSV (raw %v) writes %s %q: guarded, and not the hostile name", name, raw, recs[0][i], v)
					}
				}
			}
			if found == 0 {
				t.Fatalf("%s CSV (raw %v) has no row of the renamed payment method: the test tests nothing", name, raw)
			}
		}
	}

	// LibreOffice, as a finance team opens the files.
	soffice, err := exec.LookPath("soffice")
	if err != nil {
		t.Fatal("soffice (LibreOffice) is not installed: run the tests with scripts/test, which installs it (apt-get install libreoffice-calc-nogui)")
	}
	csvs, _ := filepath.Glob(filepath.Join(files, "*.csv"))
	if len(csvs) < 3 {
		t.Fatalf("CSVs to open: %v, want the query's, the raw query's and a FOCUS month's", csvs)
	}
	out := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	// A profile of its own, so a LibreOffice already running elsewhere
	// does not take the job over.
	cmd := exec.CommandContext(ctx, soffice, append([]string{"-env:UserInstallation=file://" + filepath.Join(out, "profile"),
		"--headless", "--convert-to", "xlsx", "--outdir", out}, csvs...)...)
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("soffice: %v\n%s", err, msg)
	}
	for _, p := range csvs {
		base := strings.TrimSuffix(filepath.Base(p), ".csv")
		f, err := excelize.OpenFile(filepath.Join(out, base+".xlsx"))
		if err != nil {
			t.Fatalf("LibreOffice did not convert %s: %v", base, err)
		}
		sheet := f.GetSheetList()[0]
		rows, err := f.GetRows(sheet)
		if err != nil {
			t.Fatal(err)
		}
		formulas, names, numbers := 0, 0, 0
		for i, r := range rows {
			for j, v := range r {
				cell, _ := excelize.CoordinatesToCellName(j+1, i+1)
				if fx, _ := f.GetCellFormula(sheet, cell); fx != "" {
					formulas++
				}
				if strings.Contains(v, hostileName) {
					names++
				}
				if i > 0 && base == "query" && j == 2 {
					if typ, _ := f.GetCellType(sheet, cell); typ != excelize.CellTypeNumber && typ != excelize.CellTypeUnset || !strings.HasPrefix(v, "-") {
						t.Errorf("LibreOffice reads the negated cost %s of %s as %q (type %v), not a negative number", cell, base, v, typ)
					}
					numbers++
				}
			}
		}
		f.Close()
		switch {
		case base == "query-raw":
			if formulas == 0 {
				t.Errorf("LibreOffice runs no formula in the raw CSV: the check below cannot see a guard missing")
			}
		case formulas > 0 || names == 0:
			t.Errorf("LibreOffice reads %d formulas in %s and the name as text %d times: want none, and the name as text", formulas, base, names)
		}
		if base == "query" && numbers == 0 {
			t.Errorf("LibreOffice read no negated cost in %s", base)
		}
	}
}

func readCSV(t *testing.T, b []byte) [][]string {
	t.Helper()
	recs, err := csv.NewReader(bytes.NewReader(b)).ReadAll()
	if err != nil || len(recs) < 2 {
		t.Fatalf("CSV of %d records: %v\n%s", len(recs), err, b)
	}
	return recs
}
