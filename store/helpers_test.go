package store

import (
	"context"
	"errors"
	"iter"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/tally-dev/tally"
)

// openTemp opens a new store in a temporary folder and closes it when the
// test ends. The store is a copy of one Open created for the package's
// tests (newStoreFile): creating and migrating a store costs about a
// second of CPU, opening a copy a fifth of that. The tests of creating a
// store call Open on a path of their own.
func openTemp(t *testing.T) *Store {
	t.Helper()
	b, err := newStoreFile()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "tally.duckdb")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// newStoreFile is the file of a store Open has just created, closed.
var newStoreFile = sync.OnceValues(func() ([]byte, error) {
	dir, err := os.MkdirTemp("", "tally-store-test-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "tally.duckdb")
	s, err := Open(context.Background(), path)
	if err != nil {
		return nil, err
	}
	if err := s.Close(); err != nil {
		return nil, err
	}
	if _, err := os.Stat(path + ".wal"); err == nil {
		return nil, errors.New("the new store kept a write-ahead log after its close")
	}
	return os.ReadFile(path)
})

func date(t testing.TB, s string) time.Time {
	t.Helper()
	d, err := tally.ParseDate(s)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func window(t testing.TB, g tally.Granularity, start, end string) tally.Window {
	return tally.Window{Start: date(t, start), End: date(t, end), Granularity: g}
}

// row builds a usage row; cost is decimal text.
func row(d time.Time, meter, project, cost string) tally.MeterData {
	price := 0.25
	return tally.MeterData{
		Date: d, MeterName: meter, MeterSku: "sku-" + meter, Family: "fam", Solution: "sol",
		Unit: "minutes", Quantity: 4, Price: &price, Cost: tally.MustDecimal(cost), Currency: "USD",
		PaymentMethod: "pm-" + project, PaymentMethodName: "PM " + project, Project: project,
	}
}

func rowsOf(rows ...tally.MeterData) iter.Seq2[tally.MeterData, error] {
	return func(yield func(tally.MeterData, error) bool) {
		for _, r := range rows {
			if !yield(r, nil) {
				return
			}
		}
	}
}

// failingAfter yields rows, then the error.
func failingAfter(err error, rows ...tally.MeterData) iter.Seq2[tally.MeterData, error] {
	return func(yield func(tally.MeterData, error) bool) {
		for _, r := range rows {
			if !yield(r, nil) {
				return
			}
		}
		yield(tally.MeterData{}, err)
	}
}

func load(t *testing.T, s *Store, q tally.UsageQuery, rows ...tally.MeterData) LoadResult {
	t.Helper()
	res, err := s.LoadWindow(context.Background(), q, NewRunID(), rowsOf(rows...))
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// dump renders the whole usage table, every column but run_id and
// fetched_at, in a fixed order: the content a reload must reproduce.
func dump(t *testing.T, s *Store) []string {
	t.Helper()
	res, err := s.Query(context.Background(), `SELECT * EXCLUDE (run_id, fetched_at, organization, organization_id, key_id) FROM usage ORDER BY ALL`)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range res.Rows {
		var b strings.Builder
		for i, v := range r {
			s, ok := CellText(v, res.Types[i])
			if !ok {
				s = "NULL"
			}
			b.WriteString(s + "|")
		}
		out = append(out, b.String())
	}
	return out
}

// ledger renders the fetch_windows table in a fixed order.
func ledger(t *testing.T, s *Store) []string {
	t.Helper()
	res, err := s.Query(context.Background(), `SELECT granularity, basis, scope, start, "end", rows FROM fetch_windows ORDER BY ALL`)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range res.Rows {
		var parts []string
		for i, v := range r {
			s, _ := CellText(v, res.Types[i])
			parts = append(parts, s)
		}
		out = append(out, strings.Join(parts, " "))
	}
	return out
}

// scalar runs a one-value query.
func scalar(t *testing.T, s *Store, query string, args ...any) any {
	t.Helper()
	res, err := s.Query(context.Background(), query, args...)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Rows) != 1 || len(res.Rows[0]) != 1 {
		t.Fatalf("%s: got %d rows, want one value", query, len(res.Rows))
	}
	return res.Rows[0][0]
}

func count(t *testing.T, s *Store, query string, args ...any) int64 {
	t.Helper()
	switch v := scalar(t, s, query, args...).(type) {
	case int64:
		return v
	default:
		t.Fatalf("%s: got %T, want int64", query, v)
		return 0
	}
}

func equalLines(t *testing.T, what string, got, want []string) {
	t.Helper()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("%s differ:\ngot:\n%s\nwant:\n%s", what, strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func mustContain(t *testing.T, err error, parts ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("got no error, want one containing %q", parts)
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Fatalf("error %q does not contain %q", err, p)
		}
	}
}

var errBoom = errors.New("connection reset by peer")

func decimalSum(ds ...tally.Decimal) tally.Decimal {
	sum := tally.MustDecimal("0")
	for _, d := range ds {
		sum = sum.Add(d)
	}
	return sum
}

func mustDecimal(t *testing.T, v any) tally.Decimal {
	t.Helper()
	d, ok := v.(tally.Decimal)
	if !ok {
		t.Fatalf("got %T %v, want tally.Decimal", v, v)
	}
	return d
}

// olderStore makes at path a store as a Tally before migration version left
// it: the migrations before version and none of this Tally's views (those
// may read what the schema lacks then), with stmts run on it. It is
// returned open; Open then migrates it.
func olderStore(t *testing.T, path string, version int, stmts ...string) *Store {
	t.Helper()
	before := 0
	for _, m := range realMigrations(t) {
		if m.version < version {
			before++
		}
	}
	o := defaultOptions()
	o.migrations = migrationsFS(t, before, nil)
	o.views = fstest.MapFS{}
	s, err := openWith(context.Background(), path, o)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range stmts {
		if _, err := s.DB().ExecContext(context.Background(), q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	return s
}

// checkUsageKeys fails t unless every usage row has a key, and its key
// stands for the row's organization, basis, granularity, months of date and
// of period_at, payment method, meter, sku and project, and no two keys
// share an id.
func checkUsageKeys(t *testing.T, s *Store) {
	t.Helper()
	checkUsageKeysOf(t, s, true)
}

// checkUsageKeysOf is checkUsageKeys, of the rows with a key only unless
// all.
func checkUsageKeysOf(t *testing.T, s *Store, all bool) {
	t.Helper()
	if n := count(t, s, MisnumberedUsage, all); n != 0 {
		t.Errorf("%d usage rows without the key of their texts, or key ids used twice", n)
	}
}
