package store

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/tally-dev/tally"
)

// TestRecordCloseFingerprint: the fingerprint's rows and cost per currency
// are the figures' sums, exact, also for a month with no rows; a reopen is
// its own row and the latest row decides.
func TestRecordCloseFingerprint(t *testing.T) {
	s := openTemp(t)
	ctx := context.Background()
	oct, sep := date(t, "2026-10-01"), date(t, "2026-09-01")
	at := time.Date(2026, 11, 5, 9, 0, 0, 0, time.UTC)
	figs := []tally.CloseFigure{
		{Project: "p1", MeterName: "m1", PaymentMethod: "pm", Currency: "EUR", Rows: 3, Cost: "1.000000000001", Billed: "1.000000000001", Effective: "1.000000000001", Quantity: "3", Unit: "minutes"},
		{Project: "", MeterName: "m2", Currency: "EUR", Rows: 2, Cost: "2.5", Billed: "0", Effective: "2.5", Quantity: "5"},
		{Project: "p2", MeterName: "m1", PaymentMethod: "pm2", Currency: "USD", Rows: 1, Cost: "0.1", Billed: "0.1", Effective: "0", Quantity: "0.5", Unit: "gigabytes"},
	}
	c := MonthClose{ID: NewRunID(), Month: oct, Basis: tally.BasisUsage, Granularity: tally.Day, At: at, Who: "ann", Reason: "signed", ContentHash: "h", FinalWorkbook: "f.xlsx"}
	if err := s.RecordClose(ctx, c, figs); err != nil {
		t.Fatal(err)
	}
	if got := scalar(t, s, `SELECT CAST(cost AS VARCHAR) || ' ' || rows FROM month_closes`); got != "{EUR=3.500000000001, USD=0.100000000000} 6" {
		t.Fatalf("fingerprint %v", got)
	}
	empty := MonthClose{ID: NewRunID(), Month: sep, Basis: tally.BasisUsage, Granularity: tally.Day, At: at, Who: "ann", ContentHash: "h0", FinalWorkbook: "s.xlsx"}
	if err := s.RecordClose(ctx, empty, nil); err != nil {
		t.Fatal(err)
	}
	if got := scalar(t, s, `SELECT cardinality(cost) || ' ' || rows FROM month_closes WHERE month = DATE '2026-09-01'`); got != "0 0" {
		t.Fatalf("empty month's fingerprint %v", got)
	}
	if err := s.RecordReopen(ctx, MonthClose{ID: NewRunID(), Month: oct, Basis: tally.BasisUsage, Granularity: tally.Day, At: at.Add(time.Hour), Who: "bob", Reason: "credit note"}); err != nil {
		t.Fatal(err)
	}
	last, err := s.LatestClose(ctx, "", oct, tally.BasisUsage, tally.Day)
	if err != nil {
		t.Fatal(err)
	}
	if last == nil || last.Action != ActionReopen || last.Who != "bob" || last.Reason != "credit note" {
		t.Fatalf("latest close %+v", last)
	}
	if got := scalar(t, s, `SELECT string_agg(strftime(month, '%Y-%m'), ',' ORDER BY month) FROM closed_months`); got != "2026-09" {
		t.Fatalf("closed_months %v", got)
	}
	if last, err := s.LatestClose(ctx, "", date(t, "2026-08-01"), tally.BasisUsage, tally.Day); err != nil || last != nil {
		t.Fatalf("a month never closed: %+v, %v", last, err)
	}
}

// TestCloseKeepsItsKeys: a close keeps what its rows in focus carry besides
// their figures (month_close_keys), one row per project, meter, payment
// method and currency of the month's usage; a later load that adds a key
// to the closed month (a late charge of a meter the month did not have)
// adds its row; and a writer opening a store whose closes have none (closed
// before migration 0018) fills them.
func TestCloseKeepsItsKeys(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "tally.duckdb")
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { s.Close() }()
	oct := date(t, "2026-10-01")
	load(t, s, tally.UsageQuery{Window: window(t, tally.Day, "2026-10-01", "2026-11-01")},
		row(date(t, "2026-10-05"), "m1", "p1", "1.5"), row(date(t, "2026-10-06"), "m2", "p1", "2"), row(date(t, "2026-10-06"), "m1", "p2", "3"))
	c := MonthClose{ID: NewRunID(), Month: oct, Basis: tally.BasisUsage, Granularity: tally.Day, At: time.Date(2026, 11, 2, 9, 0, 0, 0, time.UTC), Who: "ann", ContentHash: "h", FinalWorkbook: "f.xlsx"}
	if err := s.RecordClose(ctx, c, nil); err != nil {
		t.Fatal(err)
	}
	keys := func() []string {
		t.Helper()
		rows, err := s.DB().QueryContext(ctx, `SELECT strftime(month, '%Y-%m') || ' ' || project || ' ' || meter_name || ' ' || payment_method || ' ' || currency || ' ' ||
       coalesce(meter_sku, '-') || ' ' || coalesce(family, '-') || ' ' || coalesce(solution, '-') || ' ' || coalesce(unit, '-') || ' ' || coalesce(payment_method_name, '-')
FROM month_close_keys ORDER BY ALL`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var out []string
		for rows.Next() {
			var l string
			if err := rows.Scan(&l); err != nil {
				t.Fatal(err)
			}
			out = append(out, l)
		}
		return out
	}
	want := []string{
		"2026-10 p1 m1 pm-p1 USD sku-m1 fam sol minutes PM p1",
		"2026-10 p1 m2 pm-p1 USD sku-m2 fam sol minutes PM p1",
		"2026-10 p2 m1 pm-p2 USD sku-m1 fam sol minutes PM p2",
	}
	equalLines(t, "the close's keys", keys(), want)

	// A late charge of a new meter, loaded after the close.
	load(t, s, tally.UsageQuery{Window: window(t, tally.Day, "2026-10-31", "2026-11-01")}, row(date(t, "2026-10-31"), "m3", "p1", "0.5"))
	want = append(want[:2:2], "2026-10 p1 m3 pm-p1 USD sku-m3 fam sol minutes PM p1", want[2])
	equalLines(t, "the close's keys after a late charge", keys(), want)
	// A load of a month after the closed one keeps them as they are.
	load(t, s, tally.UsageQuery{Window: window(t, tally.Day, "2026-11-01", "2026-11-02")}, row(date(t, "2026-11-01"), "m4", "p1", "1"))
	equalLines(t, "the close's keys after November's load", keys(), want)

	// A store closed before migration 0018 has none: the writer fills them.
	if _, err := s.DB().ExecContext(ctx, `DELETE FROM month_close_keys`); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if s, err = Open(ctx, path); err != nil {
		t.Fatal(err)
	}
	equalLines(t, "the keys a writer filled", keys(), want)
}
