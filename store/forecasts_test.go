package store

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// An alert is recorded once whatever how often it is found, and stays
// pending until a send succeeds.
func TestAlertRecordedOnceSentOnce(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	a := Alert{Key: "budget:x:actual:80:2026-06", Kind: "budget", FoundAt: time.Now(), RunID: NewRunID(),
		Month: time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC), Scope: "all", Currency: "USD", Text: "t", Payload: "{}", Status: AlertPending}
	for i, want := range []bool{true, false} {
		isNew, err := s.RecordAlert(ctx, a)
		if err != nil || isNew != want {
			t.Fatalf("record %d: new %v, %v; want new %v", i, isNew, err, want)
		}
	}
	if err := s.MarkAlert(ctx, a.Key, errors.New("webhook answered 503")); err != nil {
		t.Fatal(err)
	}
	p, err := s.PendingAlerts(ctx)
	if err != nil || len(p) != 1 || p[0].Attempts != 1 || p[0].LastError != "webhook answered 503" {
		t.Fatalf("pending after a failed send: %+v, %v", p, err)
	}
	if err := s.MarkAlert(ctx, a.Key, nil); err != nil {
		t.Fatal(err)
	}
	if p, err := s.PendingAlerts(ctx); err != nil || len(p) != 0 {
		t.Fatalf("pending after a send: %+v, %v", p, err)
	}
	if known, err := s.KnownAlert(ctx, a.Key); err != nil || !known {
		t.Fatalf("known %v, %v", known, err)
	}
}

// TestScopeCurrenciesAsTheView: the currencies of every budget scope, read
// from that scope's days only, are those scope_daily_cost gives it.
func TestScopeCurrenciesAsTheView(t *testing.T) {
	ctx := context.Background()
	s := dayViewsFixture(t)
	scopes := rowsText(t, s, `SELECT DISTINCT scope_kind, scope FROM scope_daily_cost ORDER BY ALL`)
	kinds := map[string]bool{}
	for _, sc := range append(scopes, "project|no-such-project", "all|x") {
		kind, scope, _ := strings.Cut(sc, "|")
		kinds[kind] = true
		got, err := s.ScopeCurrencies(ctx, kind, scope)
		if err != nil {
			t.Fatal(err)
		}
		want := rowsText(t, s, `SELECT DISTINCT currency FROM scope_daily_cost WHERE scope_kind = ? AND scope = ? ORDER BY currency`, kind, scope)
		equalLines(t, "currencies of "+sc, got, want)
	}
	if len(kinds) < 5 {
		t.Fatalf("the fixture has scopes of %d kinds, want all, project, payment method, family and organization", len(kinds))
	}
}
