// Package prooftest holds what the proofs against real database files and
// workbooks share: reading usage back from a DuckDB file exactly, comparing
// it with the simulator's truth, and searching files for a leaked token.
// Tests of schedules and of the tally command use it.
package prooftest

import (
	"archive/zip"
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tally-dev/tally"
	"github.com/tally-dev/tally/store"
)

// Day is the date s (YYYY-MM-DD) at midnight UTC, failing the test on bad text.
func Day(t testing.TB, s string) time.Time {
	t.Helper()
	d, err := tally.ParseDate(s)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// WithDB opens a database file read-only for fn; no run may hold it.
func WithDB(t testing.TB, path string, fn func(db *sql.DB)) {
	t.Helper()
	st, err := store.Open(context.Background(), path, store.ReadOnly())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	fn(st.DB())
}

// Stored reads the usage rows of one granularity and basis back as the
// client decoded them.
func Stored(t testing.TB, db *sql.DB, g tally.Granularity, basis string, from, to time.Time) []tally.MeterData {
	t.Helper()
	rows, _ := StoredRuns(t, db, g, basis, from, to)
	return rows
}

// StoredRuns is stored with the run id that wrote each row.
func StoredRuns(t testing.TB, db *sql.DB, g tally.Granularity, basis string, from, to time.Time) (rows []tally.MeterData, runs []string) {
	t.Helper()
	col := "date"
	if basis == string(tally.BasisReported) {
		col = "date_processed"
	}
	rs, err := db.Query(`SELECT date, date_processed, meter_name, meter_sku, family, solution, unit,
       quantity, price, CAST(cost AS VARCHAR), currency, entitlement, entitlement_type,
       payment_method, payment_method_name, project, CAST(run_id AS VARCHAR)
FROM usage WHERE granularity = ? AND basis = ? AND `+col+` >= ? AND `+col+` < ?`, string(g), basis, from, to)
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	for rs.Next() {
		var (
			md                                                    tally.MeterData
			processed                                             sql.NullTime
			sku, family, solution, unit, ent, entType, pm, pmName sql.NullString
			project                                               sql.NullString
			price                                                 sql.NullFloat64
			cost, run                                             string
		)
		if err := rs.Scan(&md.Date, &processed, &md.MeterName, &sku, &family, &solution, &unit,
			&md.Quantity, &price, &cost, &md.Currency, &ent, &entType, &pm, &pmName, &project, &run); err != nil {
			t.Fatal(err)
		}
		md.Date = md.Date.UTC()
		if processed.Valid {
			p := processed.Time.UTC()
			md.DateProcessed = &p
		}
		if price.Valid {
			md.Price = &price.Float64
		}
		md.MeterSku, md.Family, md.Solution, md.Unit = sku.String, family.String, solution.String, unit.String
		md.Entitlement, md.EntitlementType, md.PaymentMethod, md.PaymentMethodName = ent.String, entType.String, pm.String, pmName.String
		md.Project = project.String
		if md.Cost, err = tally.ParseDecimal(cost); err != nil {
			t.Fatal(err)
		}
		rows = append(rows, md)
		runs = append(runs, run)
	}
	if err := rs.Err(); err != nil {
		t.Fatal(err)
	}
	return rows, runs
}

// Render is a row as one line, every field exact: floats by their shortest
// round-trip text, costs as exact fractions.
func Render(md tally.MeterData) string {
	f := func(p *float64) string {
		if p == nil {
			return "null"
		}
		return strconv.FormatFloat(*p, 'g', -1, 64)
	}
	processed := "null"
	if md.DateProcessed != nil {
		processed = md.DateProcessed.UTC().Format(time.RFC3339)
	}
	return strings.Join([]string{
		md.Date.UTC().Format(time.RFC3339), processed, md.MeterName, md.MeterSku, md.Family, md.Solution,
		md.Unit, f(&md.Quantity), f(md.Price), md.Cost.Rat().RatString(), md.Currency, md.Entitlement,
		md.EntitlementType, md.PaymentMethod, md.PaymentMethodName, md.Project,
	}, "|")
}

func RenderAll(rows []tally.MeterData) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = Render(r)
	}
	slices.Sort(out)
	return out
}

// Totals sums costs per currency exactly, in DuckDB.
func Totals(t testing.TB, db *sql.DB, g tally.Granularity, basis string, from, to time.Time) (map[string]tally.Decimal, int) {
	t.Helper()
	col := "date"
	if basis == string(tally.BasisReported) {
		col = "date_processed"
	}
	rows, err := db.Query(`SELECT currency, CAST(sum(cost) AS VARCHAR), count(*) FROM usage
WHERE granularity = ? AND basis = ? AND `+col+` >= ? AND `+col+` < ? GROUP BY currency`, string(g), basis, from, to)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]tally.Decimal{}
	n := 0
	for rows.Next() {
		var cur, sum string
		var c int
		if err := rows.Scan(&cur, &sum, &c); err != nil {
			t.Fatal(err)
		}
		d, err := tally.ParseDecimal(sum)
		if err != nil {
			t.Fatal(err)
		}
		out[cur] = d
		n += c
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out, n
}

// SameTotals reports how two per-currency totals differ, exactly; "" when
// they are equal.
func SameTotals(got, want map[string]tally.Decimal) string {
	var diffs []string
	for cur, w := range want {
		g, ok := got[cur]
		if !ok || g.Cmp(w) != 0 {
			diffs = append(diffs, fmt.Sprintf("%s: got %s, want %s", cur, g, w))
		}
	}
	for cur, g := range got {
		if _, ok := want[cur]; !ok {
			diffs = append(diffs, fmt.Sprintf("%s: got %s, want none", cur, g))
		}
	}
	slices.Sort(diffs)
	return strings.Join(diffs, "; ")
}

// FirstDiff describes the first difference of two sorted line lists.
func FirstDiff(got, want []string) string {
	for i := 0; i < max(len(got), len(want)); i++ {
		var g, w string
		if i < len(got) {
			g = got[i]
		}
		if i < len(want) {
			w = want[i]
		}
		if g != w {
			return fmt.Sprintf("%d lines vs %d; first difference at line %d:\n  got  %s\n  want %s", len(got), len(want), i, g, w)
		}
	}
	return ""
}

// Dump is the whole usage table, every column but run_id, fetched_at and
// key_id (Tally's own number for the row's texts, which depends on the
// order windows loaded in), in a fixed order.
func Dump(t testing.TB, path string) []string {
	t.Helper()
	var out []string
	WithDB(t, path, func(db *sql.DB) {
		rows, err := db.Query(`SELECT COLUMNS(* EXCLUDE (run_id, fetched_at, key_id))::VARCHAR FROM usage ORDER BY ALL`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		cols, err := rows.Columns()
		if err != nil {
			t.Fatal(err)
		}
		vals := make([]sql.NullString, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		for rows.Next() {
			if err := rows.Scan(ptrs...); err != nil {
				t.Fatal(err)
			}
			parts := make([]string, len(vals))
			for i, v := range vals {
				parts[i] = "null"
				if v.Valid {
					parts[i] = strconv.Quote(v.String)
				}
			}
			out = append(out, strings.Join(parts, "|"))
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		// The interface's 18 fields, and the organization the row
		// belongs to (its name and id).
		if len(cols) != 20 {
			t.Fatalf("usage has %d columns besides run_id and fetched_at, want 20: %q", len(cols), cols)
		}
	})
	return out
}

// QueryStrings runs a query of one text column and returns its rows.
func QueryStrings(t testing.TB, db *sql.DB, query string, args ...any) []string {
	t.Helper()
	rows, err := db.Query(query, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func NoTokenInFiles(t testing.TB, dir, token string) {
	t.Helper()
	err := filepath.Walk(dir, func(path string, fi os.FileInfo, err error) error {
		if err != nil || fi.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if bytes.Contains(b, []byte(token)) {
			t.Errorf("the token appears in %s", path)
		}
		if strings.HasSuffix(path, ".xlsx") {
			zr, err := zip.NewReader(bytes.NewReader(b), int64(len(b)))
			if err != nil {
				return fmt.Errorf("open workbook %s: %w", path, err)
			}
			for _, f := range zr.File {
				rc, err := f.Open()
				if err != nil {
					return err
				}
				part, err := io.ReadAll(rc)
				rc.Close()
				if err != nil {
					return err
				}
				if bytes.Contains(part, []byte(token)) {
					t.Errorf("the token appears in %s, part %s", path, f.Name)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// Labelled is the value beside the first cell holding label in column A.
func Labelled(rows [][]string, label string) string {
	for _, r := range rows {
		if len(r) > 1 && r[0] == label {
			return r[1]
		}
	}
	return ""
}
