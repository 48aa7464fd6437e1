package store

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"testing"
	"time"

	duckdb "github.com/duckdb/duckdb-go/v2"

	"github.com/tally-dev/tally"
)

// numberedRows yields n rows of w whose quantity is their number, failing
// with err instead of row fail (from 1) when fail > 0.
func numberedRows(w tally.Window, n, fail int, err error) func(func(tally.MeterData, error) bool) {
	return func(yield func(tally.MeterData, error) bool) {
		for i := 1; i <= n; i++ {
			if i == fail {
				yield(tally.MeterData{}, err)
				return
			}
			md := row(w.Start.Add(time.Duration(i%(31*24))*time.Hour), fmt.Sprintf("meter-%d", i%9), fmt.Sprintf("p%d", i%4), "1.5")
			md.Quantity = float64(i)
			if i%3 == 0 {
				md.Project, md.Price, md.DateProcessed = "", nil, nil
			}
			if !yield(md, nil) {
				return
			}
		}
	}
}

// A window of many chunks, which DuckDB may fill on several threads, loads
// every row exactly once; a failure after several chunks were inserted
// rolls all of them back and is returned as it was raised.
func TestLoadWindowManyChunks(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	w := window(t, tally.Hour, "2026-01-01", "2026-02-01")
	const n = 30_000
	res, err := s.LoadWindow(ctx, tally.UsageQuery{Window: w}, NewRunID(), numberedRows(w, n, 0, nil))
	if err != nil {
		t.Fatal(err)
	}
	if res.Rows != n {
		t.Fatalf("loaded %d rows, want %d", res.Rows, n)
	}
	check := func() {
		t.Helper()
		got := fmt.Sprint(scalar(t, s, `SELECT count(*) || ' ' || count(DISTINCT quantity) || ' ' || sum(quantity)::BIGINT || ' ' || count(project) || ' ' || count(price) || ' ' || sum(cost) FROM usage`))
		want := fmt.Sprintf("%d %d %d %d %d %s", n, n, n*(n+1)/2, n-n/3, n-n/3, "45000.000000000000")
		if got != want {
			t.Fatalf("count, distinct quantities, their sum, projects, prices, cost: %s, want %s", got, want)
		}
	}
	check()

	boom := errors.New("connection reset mid-window")
	_, err = s.LoadWindow(ctx, tally.UsageQuery{Window: w}, NewRunID(), numberedRows(w, n, 20_001, boom))
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v, want the rows' own error", err)
	}
	mustContain(t, err, "after 20000 rows")
	check() // the first load stands, whole

	// A row the window refuses, deep in the stream, names its number.
	bad := func(yield func(tally.MeterData, error) bool) {
		for md, err := range numberedRows(w, n, 0, nil) {
			if md.Quantity == 12_345 {
				md.Date = w.End
			}
			if !yield(md, err) {
				return
			}
		}
	}
	_, err = s.LoadWindow(ctx, tally.UsageQuery{Window: w}, NewRunID(), bad)
	mustContain(t, err, "row 12345", "outside the window")
	check()
}

// A cancelled context ends a load in mid-stream: nothing of it is kept, and
// the error is the context's.
func TestLoadWindowCancelledMidStream(t *testing.T) {
	s := openTemp(t)
	w := window(t, tally.Hour, "2026-01-01", "2026-02-01")
	ctx, cancel := context.WithCancel(context.Background())
	rows := func(yield func(tally.MeterData, error) bool) {
		for md, err := range numberedRows(w, 50_000, 0, nil) {
			if md.Quantity == 10_000 {
				cancel()
			}
			if !yield(md, err) {
				return
			}
		}
	}
	_, err := s.LoadWindow(ctx, tally.UsageQuery{Window: w}, NewRunID(), rows)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if got := fmt.Sprint(scalar(t, s, `SELECT count(*) FROM usage`)); got != "0" {
		t.Fatalf("%s rows kept", got)
	}
}

// A load runs DuckDB on one thread, at loadMemoryMB (twice that once a
// second runs beside it) and without FSST (loadThreads), also when two
// load at once, and the database's own thread count, the writer's memory
// limit and every compression method are back once no load runs, also
// after a load that failed.
func TestLoadRunsOnOneThread(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	setting := func(name string) string {
		t.Helper()
		var v string
		if err := s.DB().QueryRowContext(ctx, "SELECT CAST(current_setting(?) AS VARCHAR)", name).Scan(&v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	threads := func() int64 {
		t.Helper()
		n, err := strconv.ParseInt(setting("threads"), 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	memory := func() string { return setting("memory_limit") }
	skipped := func() string { return setting("disabled_compression_methods") }
	own, ownMemory := threads(), memory()
	if got := skipped(); got != "" {
		t.Fatalf("the writer skips compression methods %q, want none", got)
	}
	if ownMemory != "152.5 MiB" { // 160MB
		t.Fatalf("the writer's memory_limit: %s, want 152.5 MiB", ownMemory)
	}
	if own < 2 {
		// DuckDB's default is the machine's cores; the test needs two.
		if _, err := s.DB().ExecContext(ctx, "SET GLOBAL threads = 2"); err != nil {
			t.Fatal(err)
		}
		s.loads.threads, own = 2, 2
	}
	// Two windows load at once; each, mid-stream, sees one thread.
	seen, seenMemory, seenSkipped := make(chan int64, 2), make(chan string, 2), make(chan string, 2)
	watch := func(w tally.Window) func(func(tally.MeterData, error) bool) {
		return func(yield func(tally.MeterData, error) bool) {
			for md, err := range numberedRows(w, 5000, 0, nil) {
				if md.Quantity == 2500 {
					seen <- threads()
					seenMemory <- memory()
					seenSkipped <- skipped()
				}
				if !yield(md, err) {
					return
				}
			}
		}
	}
	w1, w2 := window(t, tally.Hour, "2026-01-01", "2026-02-01"), window(t, tally.Hour, "2026-03-01", "2026-04-01")
	done := make(chan error, 2)
	for _, w := range []tally.Window{w1, w2} {
		go func() {
			_, err := s.LoadWindow(ctx, tally.UsageQuery{Window: w}, NewRunID(), watch(w))
			done <- err
		}()
	}
	for range 2 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if got := <-seen; got != 1 {
			t.Errorf("threads while a window loads: %d, want 1", got)
		}
		if got := <-seenMemory; got != "61.0 MiB" && got != "122.0 MiB" { // 64MB, or 128MB once both run
			t.Errorf("memory_limit while a window loads: %s, want 61.0 MiB, or 122.0 MiB with two", got)
		}
		if got := <-seenSkipped; got != "FSST,DICT_FSST" {
			t.Errorf("compression methods skipped while a window loads: %q, want FSST,DICT_FSST", got)
		}
	}
	if got := threads(); got != own {
		t.Errorf("threads after the loads: %d, want the database's %d", got, own)
	}
	if got := memory(); got != ownMemory {
		t.Errorf("memory_limit after the loads: %s, want the writer's %s", got, ownMemory)
	}
	if got := skipped(); got != "" {
		t.Errorf("compression methods skipped after the loads: %q, want none", got)
	}
	// One load alone: its own share.
	alone := window(t, tally.Hour, "2026-05-01", "2026-06-01")
	if _, err := s.LoadWindow(ctx, tally.UsageQuery{Window: alone}, NewRunID(), watch(alone)); err != nil {
		t.Fatal(err)
	}
	<-seen
	<-seenSkipped
	if got := <-seenMemory; got != "61.0 MiB" {
		t.Errorf("memory_limit while one window loads: %s, want 61.0 MiB", got)
	}
	boom := errors.New("cut off")
	if _, err := s.LoadWindow(ctx, tally.UsageQuery{Window: w1}, NewRunID(), numberedRows(w1, 100, 50, boom)); !errors.Is(err, boom) {
		t.Fatalf("err = %v, want %v", err, boom)
	}
	if got := threads(); got != own {
		t.Errorf("threads after a failed load: %d, want the database's %d", got, own)
	}
	if got := memory(); got != ownMemory {
		t.Errorf("memory_limit after a failed load: %s, want the writer's %s", got, ownMemory)
	}
	if got := skipped(); got != "" {
		t.Errorf("compression methods skipped after a failed load: %q, want none", got)
	}
}

// Texts reach the table as sent, whichever way a statement takes them
// (textShape): numbers into lists that grow chunk after chunk (each
// growth a new statement), a column that outgrows its list (maxListTexts)
// going in as text mid-window, and every column going in as text once the
// lists grew maxListGrowths times. An empty text is NULL where the column
// keeps it so, and kept as sent in meter_name and currency.
func TestLoadWindowTextsAsSent(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	w := window(t, tally.Hour, "2026-01-01", "2026-02-01")
	chunk := duckdb.GetDataChunkCapacity()
	n := (maxListGrowths + 4) * chunk
	want := make([]tally.MeterData, n)
	for i := range want {
		c := i / chunk
		md := row(w.Start.Add(time.Duration(i%(31*24))*time.Hour), fmt.Sprintf("meter-%d-%d", c, i%7), fmt.Sprintf("p%d", i%5), "1.25")
		md.Quantity = float64(i)
		// Every column has texts of its own, numbered differently from
		// its neighbours', so that a number packed into another column's
		// place reads back as a wrong text.
		md.Family, md.Solution, md.Unit = fmt.Sprintf("fam-%d", i%3), fmt.Sprintf("sol-%d", i%4), fmt.Sprintf("unit-%d", i%2)
		md.Entitlement, md.EntitlementType = fmt.Sprintf("ent-%d", i%6), fmt.Sprintf("type-%d", i%9)
		md.Currency = []string{"USD", "EUR", "JPY"}[i%3]
		switch {
		case i%11 == 0:
			md.MeterName, md.Currency, md.Project, md.Family = "", "", "", ""
		case i%13 == 0:
			md.PaymentMethodName = `it's "quoted", [bracketed] and é`
		}
		if c >= 2 && c < 5 {
			md.Project = fmt.Sprintf("project-%d", i) // more than maxListTexts by chunk 4
		}
		want[i] = md
	}
	res, err := s.LoadWindow(ctx, tally.UsageQuery{Window: w}, NewRunID(), rowsOf(want...))
	if err != nil {
		t.Fatal(err)
	}
	if res.Rows != int64(n) {
		t.Fatalf("loaded %d rows, want %d", res.Rows, n)
	}
	got, err := s.Query(ctx, `SELECT meter_name, meter_sku, family, solution, unit, currency, entitlement, entitlement_type,
       payment_method, payment_method_name, project FROM usage ORDER BY quantity`)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Rows) != n {
		t.Fatalf("%d rows read back, want %d", len(got.Rows), n)
	}
	for i, md := range want {
		texts := []string{md.MeterName, md.MeterSku, md.Family, md.Solution, md.Unit, md.Currency, md.Entitlement, md.EntitlementType,
			md.PaymentMethod, md.PaymentMethodName, md.Project}
		for k, v := range texts {
			var w any = v
			if v == "" && got.Columns[k] != "meter_name" && got.Columns[k] != "currency" {
				w = nil
			}
			if got.Rows[i][k] != w {
				t.Fatalf("row %d, %s: %#v, want %#v", i, got.Columns[k], got.Rows[i][k], w)
			}
		}
	}
	// Each row's key is found by its texts' numbers while its columns are
	// listed, and by the texts once one is not: the same keys either way.
	checkUsageKeys(t, s)
}
