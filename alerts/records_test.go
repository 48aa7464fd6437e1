package alerts

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/tally-dev/tally/store"
)

// An alert is recorded once whatever how often it is found, and stays
// pending until a send succeeds.
func TestAlertRecordedOnceSentOnce(t *testing.T) {
	ctx := context.Background()
	s, err := store.Open(ctx, filepath.Join(t.TempDir(), "tally.duckdb"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	a := Alert{Key: "budget:x:actual:80:2026-06", Kind: "budget", FoundAt: time.Now(), RunID: store.NewRunID(),
		Month: time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC), Scope: "all", Currency: "USD", Text: "t", Payload: "{}", Status: StatusPending}
	for i, want := range []bool{true, false} {
		isNew, err := Record(ctx, s, a)
		if err != nil || isNew != want {
			t.Fatalf("record %d: new %v, %v; want new %v", i, isNew, err, want)
		}
	}
	if err := Mark(ctx, s, a.Key, errors.New("webhook answered 503")); err != nil {
		t.Fatal(err)
	}
	p, err := Pending(ctx, s)
	if err != nil || len(p) != 1 || p[0].Attempts != 1 || p[0].LastError != "webhook answered 503" {
		t.Fatalf("pending after a failed send: %+v, %v", p, err)
	}
	if err := Mark(ctx, s, a.Key, nil); err != nil {
		t.Fatal(err)
	}
	if p, err := Pending(ctx, s); err != nil || len(p) != 0 {
		t.Fatalf("pending after a send: %+v, %v", p, err)
	}
	if known, err := Known(ctx, s, a.Key); err != nil || !known {
		t.Fatalf("known %v, %v", known, err)
	}
}
