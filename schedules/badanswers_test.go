package schedules

import (
	"context"
	"database/sql"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/xuri/excelize/v2"

	"github.com/tally-dev/tally"
	"github.com/tally-dev/tally/internal/prooftest"
	"github.com/tally-dev/tally/job"
	"github.com/tally-dev/tally/reports"
	"github.com/tally-dev/tally/store"
)

// Bad answers: one window's usage answer is corrupted in one way. Each
// corruption either fails that window with an error naming the window, the
// row and the field, leaving the window exactly as the previous run loaded
// it, or is stored as the README's Guarantees document. No corruption lands
// a wrong number.

// proofEditRow applies edit to the k-th row (from 1) of a JSON usage answer
// as the sim writes it: one row object a line.
func proofEditRow(t *testing.T, b []byte, k int, edit func(row string) string) []byte {
	t.Helper()
	lines := strings.Split(string(b), "\n")
	n := 0
	for i, l := range lines {
		if !strings.HasPrefix(l, `{"date"`) {
			continue
		}
		if n++; n != k {
			continue
		}
		row, comma := strings.CutSuffix(l, ",")
		row = edit(row)
		if comma {
			row += ","
		}
		lines[i] = row
		return []byte(strings.Join(lines, "\n"))
	}
	t.Fatalf("the answer has %d rows, not %d", n, k)
	return nil
}

// proofSetField replaces the value of a JSON field in a row.
func proofSetField(t *testing.T, row, field, value string) string {
	t.Helper()
	re := regexp.MustCompile(`"` + field + `":("[^"]*"|null|[-0-9.eE+]+)`)
	if !re.MatchString(row) {
		t.Fatalf("row has no field %q: %s", field, row)
	}
	return re.ReplaceAllLiteralString(row, `"`+field+`":`+value)
}

func proofCopyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestBadAnswers(t *testing.T) {
	// The first run loads everything; each case then runs again with a
	// lookback of 20 days, which plans two windows: the one whose answer
	// is corrupted, and the last one.
	e := proofStart(t, proofSetup{lookback: "20d"})
	e.mustFetch()
	bad := tally.Window{Start: prooftest.Day(t, "2026-02-18"), End: prooftest.Day(t, "2026-03-04"), Granularity: tally.Day}
	badQ := e.query(bad.Start, bad.End)
	answer := e.sim.Rows(badQ) // in answer order: row k is answer[k-1]

	type want struct {
		errParts []string          // the window fails with an error holding these
		rows     []tally.MeterData // or the window is stored as these rows
	}
	cases := []struct {
		name    string
		csv     bool
		corrupt func(t *testing.T, b []byte) []byte
		want    want
	}{
		{
			name: "malformed JSON",
			corrupt: func(t *testing.T, b []byte) []byte {
				return proofEditRow(t, b, 3, func(row string) string {
					return strings.Replace(row, `"meterName":`, `"meterName" `, 1)
				})
			},
			want: want{errParts: []string{"row 3", `"meterName"`, "malformed JSON"}},
		},
		{
			name: "CSV with an unknown header",
			csv:  true,
			corrupt: func(t *testing.T, b []byte) []byte {
				return []byte(strings.Replace(string(b), "meterSku", "meterSKU", 1))
			},
			want: want{errParts: []string{"csv header", `"meterSKU"`, "is not a MeterData field"}},
		},
		{
			name: "a cost that is not a decimal",
			corrupt: func(t *testing.T, b []byte) []byte {
				return proofEditRow(t, b, 2, func(row string) string { return proofSetField(t, row, "cost", `"12,50"`) })
			},
			want: want{errParts: []string{"row 2", `field "cost"`, `"12,50"`, "is not a decimal number"}},
		},
		{
			name: "a missing required field",
			corrupt: func(t *testing.T, b []byte) []byte {
				return proofEditRow(t, b, 2, func(row string) string {
					return regexp.MustCompile(`,"quantity":[-0-9.eE+]+`).ReplaceAllLiteralString(row, "")
				})
			},
			want: want{errParts: []string{"row 2", `field "quantity"`, "missing"}},
		},
		{
			name: "a row dated outside its window",
			corrupt: func(t *testing.T, b []byte) []byte {
				return proofEditRow(t, b, 2, func(row string) string { return proofSetField(t, row, "date", `"2026-05-01T00:00:00Z"`) })
			},
			want: want{errParts: []string{"row 2", "date 2026-05-01T00:00:00Z", "date is outside the window " + bad.String()}},
		},
		{
			name: "a currency that is not a currency code",
			corrupt: func(t *testing.T, b []byte) []byte {
				return proofEditRow(t, b, 2, func(row string) string { return proofSetField(t, row, "currency", `"usd"`) })
			},
			want: want{errParts: []string{"row 2", `field "currency"`, `"usd"`, "three capital letters"}},
		},
		{
			name: "supplemental.records that the rows do not match",
			corrupt: func(t *testing.T, b []byte) []byte {
				return regexp.MustCompile(`"records":\d+`).ReplaceAll(b, []byte(`"records":9999`))
			},
			want: want{errParts: []string{"supplemental.records says 9999 rows", "2026-02-18..2026-03-04"}},
		},
		{
			name: "the same row twice",
			corrupt: func(t *testing.T, b []byte) []byte {
				// The interface counts what it sends: supplemental.records
				// counts the repeated row too.
				b = proofEditRow(t, b, 2, func(row string) string { return row + ",\n" + row })
				m := regexp.MustCompile(`"records":(\d+)`).FindSubmatchIndex(b)
				if m == nil {
					t.Fatal("the answer has no supplemental.records")
				}
				n, _ := strconv.Atoi(string(b[m[2]:m[3]]))
				return append(append(append([]byte(nil), b[:m[2]]...), strconv.Itoa(n+1)...), b[m[3]:]...)
			},
			want: want{rows: append(append([]tally.MeterData(nil), answer...), answer[1])},
		},
		// A row, or one field of it, beyond fetch.MaxRowBytes (1 MiB)
		// fails the window after reading about that much, never read whole
		// (once: a 200 MB field aborted the process in DuckDB; 2 GiB of
		// spaces streamed for minutes past api.timeout).
		{
			name: "a field of 8 MiB",
			corrupt: func(t *testing.T, b []byte) []byte {
				return proofEditRow(t, b, 2, func(row string) string {
					return proofSetField(t, row, "meterName", `"`+strings.Repeat("x", 8<<20)+`"`)
				})
			},
			want: want{errParts: []string{"row 2", "more than 1048576 bytes (1 MiB, fetch.MaxRowBytes) without a row ending"}},
		},
		{
			name: "16 MiB of spaces inside value",
			corrupt: func(t *testing.T, b []byte) []byte {
				return []byte(strings.Replace(string(b), `"value":[`, `"value":[`+strings.Repeat(" ", 16<<20), 1))
			},
			want: want{errParts: []string{"row 1", "1 MiB, fetch.MaxRowBytes"}},
		},
		{
			name: "CSV with a field of 8 MiB",
			csv:  true,
			corrupt: func(t *testing.T, b []byte) []byte {
				lines := strings.SplitN(string(b), "\n", 3)
				lines[1] += strings.Repeat("y", 8<<20)
				return []byte(strings.Join(lines, "\n"))
			},
			want: want{errParts: []string{"row 1", "1 MiB, fetch.MaxRowBytes"}},
		},
		// Text that is not UTF-8 fails the window naming the row and the
		// field; it was stored as U+FFFD, a project that does not exist.
		{
			name: "a project name that is not UTF-8",
			corrupt: func(t *testing.T, b []byte) []byte {
				return proofEditRow(t, b, 2, func(row string) string { return proofSetField(t, row, "project", "\"alpha\xff\xfe-live\"") })
			},
			want: want{errParts: []string{"row 2", `field "project"`, "is not valid UTF-8"}},
		},
		{
			name: "CSV with a project name that is not UTF-8",
			csv:  true,
			corrupt: func(t *testing.T, b []byte) []byte {
				lines := strings.SplitN(string(b), "\n", 4)
				cols := strings.Split(lines[0], ",")
				for i, c := range cols {
					if c == "project" {
						cells := strings.Split(lines[2], ",")
						cells[i] = "alpha\xff\xfe-live"
						lines[2] = strings.Join(cells, ",")
						return []byte(strings.Join(lines, "\n"))
					}
				}
				t.Fatalf("no project column in %q", lines[0])
				return nil
			},
			want: want{errParts: []string{"row 2", `field "project"`, `"alpha\xff\xfe-live"`, "is not valid UTF-8"}},
		},
		{
			name: "a well-formed currency code Tally has not seen",
			corrupt: func(t *testing.T, b []byte) []byte {
				return proofEditRow(t, b, 2, func(row string) string { return proofSetField(t, row, "currency", `"XTS"`) })
			},
			want: want{rows: proofWithRow(answer, 1, func(md *tally.MeterData) { md.Currency = "XTS" })},
		},
		{
			name: "an unknown entitlement type",
			corrupt: func(t *testing.T, b []byte) []byte {
				return proofEditRow(t, b, 2, func(row string) string { return proofSetField(t, row, "entitlementType", `"loyaltyBonus"`) })
			},
			want: want{rows: proofWithRow(answer, 1, func(md *tally.MeterData) { md.EntitlementType = "loyaltyBonus" })},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			db := filepath.Join(dir, "tally.duckdb")
			proofCopyFile(t, e.db, db)
			format := "json"
			if c.csv {
				format = "csv"
			}
			cfg := e.configWith(dir, func(s *proofSetup) { s.format = format })
			e.faults.Set(func(w http.ResponseWriter, r *http.Request, q prooftest.Request) bool {
				if !q.Usage || q.Start != bad.Start.Format(tally.DateLayout) {
					return false
				}
				rec := prooftest.Record(e.sim, r)
				prooftest.Send(w, rec, c.corrupt(t, rec.Body.Bytes()))
				return true
			})
			defer e.faults.Set(nil)
			before := proofWindowRows(t, db, badQ)
			sum, err := e.runner(cfg).Fetch(context.Background(), FetchOptions{})
			if sum.Planned != 2 {
				t.Fatalf("%d windows planned, want 2", sum.Planned)
			}
			run := proofLastRun(t, db)
			others := e.query(bad.End, e.span().Window.End)

			if c.want.errParts != nil {
				var pe *job.Partial
				if !errors.As(err, &pe) || len(pe.Of(job.KindWindow)) != 1 || pe.Of(job.KindWindow)[0].Window != bad {
					t.Fatalf("fetch returned %v, want a partial error naming window %s alone", err, bad)
				}
				msg := err.Error()
				for _, part := range append([]string{bad.String()}, c.want.errParts...) {
					if !strings.Contains(msg, part) {
						t.Errorf("the error does not say %q:\n%s", part, msg)
					}
				}
				// The window is fully old: the rows the first run stored,
				// not one of them from this run.
				after := proofWindowRows(t, db, badQ)
				if d := prooftest.FirstDiff(after.lines, before.lines); d != "" {
					t.Errorf("the failed window changed: %s", d)
				}
				if after.runs[run] > 0 {
					t.Errorf("%d rows of the failed window come from the failed run", after.runs[run])
				}
				prooftest.Exact(t, e.sim, db, e.span())
			} else {
				if err != nil {
					t.Fatalf("fetch: %v", err)
				}
				got := proofWindowRows(t, db, badQ)
				if d := prooftest.FirstDiff(got.lines, prooftest.RenderAll(c.want.rows)); d != "" {
					t.Errorf("the window is not stored as the interface answered it: %s", d)
				}
				if got.runs[run] != len(got.lines) {
					t.Errorf("%d of %d rows come from this run", got.runs[run], len(got.lines))
				}
				prooftest.WithDB(t, db, func(sdb *sql.DB) {
					rows, _ := prooftest.StoredQuery(t, sdb, badQ)
					if d := prooftest.SameTotals(prooftest.SumRows(rows), prooftest.SumRows(c.want.rows)); d != "" {
						t.Errorf("totals differ from the answer's: %s", d)
					}
				})
			}
			// Whatever happened to the bad window, the other one is exact
			// and new.
			prooftest.Exact(t, e.sim, db, others)
			if got := proofWindowRows(t, db, others); got.runs[run] != len(got.lines) {
				t.Errorf("%d of %d rows of the other window come from this run", got.runs[run], len(got.lines))
			}
		})
	}
}

// TestUnknownEntitlementTypeFlagged: a type Tally does not know is stored
// as sent and the month's workbook lists it under Flags, by name.
func TestUnknownEntitlementTypeFlagged(t *testing.T) {
	e := proofStart(t, proofSetup{})
	e.faults.Set(func(w http.ResponseWriter, r *http.Request, q prooftest.Request) bool {
		if !q.Usage || q.Start != "2026-02-12" {
			return false
		}
		rec := prooftest.Record(e.sim, r)
		prooftest.Send(w, rec, proofEditRow(t, rec.Body.Bytes(), 1, func(row string) string {
			return proofSetField(t, row, "entitlementType", `"loyaltyBonus"`)
		}))
		return true
	})
	e.mustFetch()
	st, err := store.Open(context.Background(), e.db, store.ReadOnly())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	path := filepath.Join(e.dir, "feb.xlsx")
	p := reports.Period{Month: prooftest.Day(t, "2026-02-01"), Basis: tally.BasisUsage, Granularity: tally.Day}
	if err := reports.WriteFile(context.Background(), st.DB(), p, path, reports.Options{Now: e.clock.Now}); err != nil {
		t.Fatal(err)
	}
	f, err := excelize.OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := f.GetRows("Flags")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if strings.Contains(strings.Join(r, "|"), "loyaltyBonus") {
			return
		}
	}
	t.Errorf("the Flags sheet does not list the entitlement type loyaltyBonus:\n%v", rows)
}

func proofWithRow(rows []tally.MeterData, i int, edit func(*tally.MeterData)) []tally.MeterData {
	out := append([]tally.MeterData(nil), rows...)
	edit(&out[i])
	return out
}

// proofWindow is a window's stored rows and how many each run wrote.
type proofWindow struct {
	lines []string
	runs  map[string]int
}

func proofWindowRows(t *testing.T, db string, q tally.UsageQuery) proofWindow {
	t.Helper()
	w := proofWindow{runs: map[string]int{}}
	prooftest.WithDB(t, db, func(sdb *sql.DB) {
		rows, runs := prooftest.StoredQuery(t, sdb, q)
		w.lines = prooftest.RenderAll(rows)
		for _, r := range runs {
			w.runs[r]++
		}
	})
	return w
}

// proofLastRun is the id of the latest run recorded in the database.
func proofLastRun(t *testing.T, db string) string {
	t.Helper()
	var id string
	prooftest.WithDB(t, db, func(sdb *sql.DB) {
		if err := sdb.QueryRow(`SELECT CAST(id AS VARCHAR) FROM runs ORDER BY started DESC LIMIT 1`).Scan(&id); err != nil {
			t.Fatal(err)
		}
	})
	return id
}
