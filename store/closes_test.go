package store

import (
	"context"
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
	figs := []CloseFigure{
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
