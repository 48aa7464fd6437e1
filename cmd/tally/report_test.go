package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/xuri/excelize/v2"

	"github.com/tally-dev/tally/job"
	"github.com/tally-dev/tally/store"
)

// reportSetup writes a config and a published database holding a few
// October usage rows: 1.25 + 2.5 USD by usage date, 7 USD by reported date.
// The files are a copy, in a folder of the test's own, of those
// makeReportFixture left.
func reportSetup(t *testing.T) (cfg, dir string) {
	t.Helper()
	dir = placeFixture(t, reportFixture)
	return filepath.Join(dir, "tally.yaml"), dir
}

var reportFixture = onceFixture(makeReportFixture)

func makeReportFixture(dir string) error {
	if err := os.MkdirAll(filepath.Join(dir, "data"), 0o700); err != nil {
		return err
	}
	yml := "usage:\n  granularity: day\n  start: 2026-01-01\nstore:\n  path: data/tally.duckdb\nreports:\n  dir: out\n"
	if err := os.WriteFile(filepath.Join(dir, "tally.yaml"), []byte(yml), 0o600); err != nil {
		return err
	}
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(dir, "data", "tally.duckdb"))
	if err != nil {
		return err
	}
	defer st.Close()
	for _, r := range []struct {
		basis, cost string
		day         int
	}{{"usage", "1.25", 3}, {"usage", "2.5", 20}, {"reported", "7", 4}, {"usage", "100", 40}} {
		date := time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC).AddDate(0, 0, r.day-1)
		if _, err := st.DB().ExecContext(ctx, `INSERT INTO usage (granularity, basis, date, date_processed, meter_name, quantity, cost, currency, project, run_id, fetched_at)
			VALUES ('day', ?, ?, ?, 'encoding', 1, CAST(? AS DECIMAL(38,12)), 'USD', 'alpha', CAST('0194c3a0-0000-7000-8000-000000000001' AS UUID), ?)`,
			r.basis, date, date.AddDate(0, 0, 1), r.cost, date); err != nil {
			return err
		}
	}
	if _, err := st.Publish(ctx); err != nil {
		return err
	}
	return st.Close()
}

// usdTotal reads the USD total off a workbook's Summary.
func usdTotal(t *testing.T, path string) string {
	t.Helper()
	f, err := excelize.OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := f.GetRows("Summary", excelize.Options{RawCellValue: true})
	if err != nil {
		t.Fatal(err)
	}
	var header []string
	for _, r := range rows {
		if len(r) > 0 && r[0] == "Currency" && slices.Contains(r, "Total usage value") {
			header = r
			continue
		}
		if header != nil && len(r) > 0 && r[0] == "USD" {
			return r[slices.Index(header, "Total usage value")]
		}
	}
	t.Fatalf("no USD total in %s", path)
	return ""
}

func TestReportWritesWorkbook(t *testing.T) {
	cfg, dir := reportSetup(t)
	out, err := execCLI(t, "", "report", "--config", cfg, "--month", "2026-10")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "out", "2026-10", "tally-cost-2026-10.xlsx")
	if !strings.Contains(out, path) {
		t.Errorf("report printed %q, want the path %s", out, path)
	}
	if got := usdTotal(t, path); got != "3.75" {
		t.Errorf("usage-basis USD total %s, want 3.75", got)
	}

	custom := filepath.Join(dir, "invoiced.xlsx")
	if _, err := execCLI(t, "", "report", "--config", cfg, "--month", "2026-10", "--basis", "reported", "--out", custom); err != nil {
		t.Fatal(err)
	}
	if got := usdTotal(t, custom); got != "7" {
		t.Errorf("reported-basis USD total %s, want 7", got)
	}
}

// tally report --chargeback writes the workbook, with its Chargeback
// sheet, and one statement per cost centre, printing each path.
func TestReportChargeback(t *testing.T) {
	cfg, dir := reportSetup(t)
	yml := "usage:\n  granularity: day\n  start: 2026-01-01\nstore:\n  path: data/tally.duckdb\nreports:\n  dir: out\n" +
		"allocation:\n  cost_centres:\n    - {name: Video, owner: video@example.com, projects: [alpha]}\n    - {name: Audio}\n" +
		"  rules:\n    - {name: half, from: 2026-10, share: {meters: [encoding]}, to: [Video, Audio], method: fixed, percent: {Video: 50, Audio: 50}}\n"
	if err := os.WriteFile(cfg, []byte(yml), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := execCLI(t, "", "report", "--config", cfg, "--month", "2026-10", "--chargeback")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []string{"Audio", "Video"} {
		path := filepath.Join(dir, "out", "2026-10", "tally-chargeback-2026-10-"+c+".xlsx")
		if !strings.Contains(out, path+" (statement of "+c+")") {
			t.Errorf("output %q lacks %s", out, path)
		}
		f, err := excelize.OpenFile(path)
		if err != nil {
			t.Fatal(err)
		}
		rows, _ := f.GetRows("Statement", excelize.Options{RawCellValue: true})
		f.Close()
		total := ""
		for _, r := range rows {
			if len(r) >= 7 && r[0] == "Total" && r[2] == "USD" {
				total = r[6]
			}
		}
		if total != "1.875" { // half of 1.25 + 2.5
			t.Errorf("%s's USD total %q, want 1.875", c, total)
		}
	}
}

func TestReportUsageErrors(t *testing.T) {
	cfg, dir := reportSetup(t)
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"no config", []string{"report", "--month", "2026-10"}, "--config is required"},
		{"no month", []string{"report", "--config", cfg}, "--month is required"},
		{"bad month", []string{"report", "--config", cfg, "--month", "2026-13"}, `"2026-13" is not a YYYY-MM`},
		{"day given", []string{"report", "--config", cfg, "--month", "2026-10-01"}, `"2026-10-01" is not a YYYY-MM`},
		{"bad basis", []string{"report", "--config", cfg, "--month", "2026-10", "--basis", "invoice"}, `--basis "invoice" is not one of usage, reported`},
		{"bad out", []string{"report", "--config", cfg, "--month", "2026-10", "--out", filepath.Join(dir, "x.csv")}, "must end in .xlsx"},
		{"missing config", []string{"report", "--config", filepath.Join(dir, "nope.yaml"), "--month", "2026-10"}, "nope.yaml"},
		{"chargeback without cost centres", []string{"report", "--config", cfg, "--month", "2026-10", "--chargeback"}, "--chargeback: the config has no allocation.cost_centres"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := execCLI(t, "", c.args...)
			var ue usageError
			if !errors.As(err, &ue) {
				t.Fatalf("%v: error %v, want a usage error (exit 2)", c.args, err)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q does not say %q", err, c.want)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(dir, "out")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused report created %s/out", dir)
	}
}

func TestReportWithoutPublishedCopy(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "tally.yaml")
	if err := os.WriteFile(cfg, []byte("usage:\n  start: 2026-01-01\nstore:\n  path: tally.duckdb\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := execCLI(t, "", "report", "--config", cfg, "--month", "2026-10")
	if err == nil || !strings.Contains(err.Error(), "nothing was loaded yet") || !strings.Contains(err.Error(), "tally fetch --config "+cfg) {
		t.Fatalf("report with no data: %v, want an error saying tally fetch creates it", err)
	}
	if code := exitCode(err); code != job.ExitRefused {
		t.Errorf("report before any fetch: exit %d, want %d (refused, nothing touched)", code, job.ExitRefused)
	}
}

// A month at usage.granularity week: exit 2 naming the setting while no
// hour, day or month window covers the month; read from the day rows once
// a day window covering October is in the ledger.
func TestReportAtWeekGranularity(t *testing.T) {
	cfg, dir := reportSetup(t)
	yml := "usage:\n  granularity: week\n  start: 2026-01-01\nstore:\n  path: data/tally.duckdb\nreports:\n  dir: out\n"
	if err := os.WriteFile(cfg, []byte(yml), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := execCLI(t, "", "report", "--config", cfg, "--month", "2026-10")
	if code := exitCode(err); code != job.ExitRefused {
		t.Fatalf("report at week with no day data: exit %d (%v), want %d", code, err, job.ExitRefused)
	}
	for _, s := range []string{`usage.granularity "week"`, "2026-10", "tally fetch --granularity"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q does not say %q", err, s)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "out")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused report created %s/out", dir)
	}

	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(dir, "data", "tally.duckdb"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.DB().ExecContext(ctx, `INSERT INTO fetch_windows (granularity, basis, scope, start, "end", rows, run_id, fetched_at)
		VALUES ('day', 'usage', 'all', DATE '2026-10-01', DATE '2026-11-01', 2, CAST('0194c3a0-0000-7000-8000-000000000001' AS UUID), now())`); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Publish(ctx); err != nil {
		t.Fatal(err)
	}
	st.Close()
	out, err := execCLI(t, "", "report", "--config", cfg, "--month", "2026-10")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "granularity day") {
		t.Errorf("report printed %q, want it to name granularity day", out)
	}
	if got := usdTotal(t, filepath.Join(dir, "out", "2026-10", "tally-cost-2026-10.xlsx")); got != "3.75" {
		t.Errorf("USD total %s, want 3.75 from the day rows", got)
	}
}
