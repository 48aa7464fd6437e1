package alerts

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/tally-dev/tally"
	"github.com/tally-dev/tally/configs"
	"github.com/tally-dev/tally/internal/testkit/storetest"
	"github.com/tally-dev/tally/store"
)

// A commitment drawn faster than it lasts raises one alert, sent once to
// a real webhook over two runs: the pool of 1000 USD (September to
// December) drew 150 in September and 10 a day on October 1 to 20, so on
// October 21 it has 650 left at 10 a day: it runs out on December 24. The
// usage commitment, drawn slowly, raises none.
func TestCommitmentAlertSentOnce(t *testing.T) {
	ctx := context.Background()
	st := storetest.Open(t)
	load := func(from, to time.Time, rows []tally.MeterData) {
		t.Helper()
		storetest.Load(t, st, tally.UsageQuery{Window: tally.Window{Start: from, End: to, Granularity: tally.Day}}, rows...)
	}
	date := func(m time.Month, d int) time.Time { return time.Date(2026, m, d, 0, 0, 0, 0, time.UTC) }
	row := func(at time.Time, cost string, ent, typ, unit string, qty float64) tally.MeterData {
		return tally.MeterData{Date: at, MeterName: "video_encoding_ondemand", Unit: unit, Quantity: qty, Cost: tally.MustDecimal(cost),
			Currency: "USD", Entitlement: ent, EntitlementType: typ, PaymentMethod: "pm-1", Project: "alpha"}
	}
	load(date(9, 1), date(10, 1), []tally.MeterData{row(date(9, 5), "100", "ent-pool", "cash", "minutes", 1), row(date(9, 25), "50", "ent-pool", "cash", "minutes", 1)})
	var oct []tally.MeterData
	for d := 1; d <= 20; d++ {
		oct = append(oct, row(date(10, d), "10", "ent-pool", "cash", "minutes", 1), row(date(10, d), "1", "ent-min", "quantity", "minutes", 5))
	}
	load(date(10, 1), date(10, 21), oct)

	var mu sync.Mutex
	var posts []map[string]any
	var keys []string
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if r.Header.Get(SignatureHeader) != Sign([]byte("hook-secret"), b) {
			t.Errorf("post unsigned or signed otherwise: %v", r.Header)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Errorf("body %s: %v", b, err)
		}
		mu.Lock()
		posts, keys = append(posts, m), append(keys, r.Header.Get("X-Tally-Alert"))
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(hook.Close)
	cfg, err := configs.Parse([]byte(fmt.Sprintf(`usage:
  start: 2026-09-01
commitments:
  - entitlement: ent-pool
    name: Encoding pool 2026
    type: spend
    amount: 1000
    currency: USD
    start: 2026-09-01
    end: 2026-12-31
  - entitlement: ent-min
    type: usage
    quantity: 100000
    unit: Minutes
    start: 2026-10-01
    end: 2027-09-30
alerts:
  webhook:
    url: %s/hooks/commitments
    secret_env: HOOK_SECRET
`, hook.URL)), t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	sec, err := cfg.Alerts.Webhook.Secret(func(string) string { return "hook-secret" })
	if err != nil {
		t.Fatal(err)
	}
	wh, err := NewWebhook(cfg.Alerts.Webhook, sec, "test")
	if err != nil {
		t.Fatal(err)
	}
	for i, now := range []time.Time{time.Date(2026, 10, 21, 6, 0, 0, 0, time.UTC), time.Date(2026, 10, 22, 6, 0, 0, 0, time.UTC)} {
		if _, err := Evaluate(ctx, st, cfg, store.NewRunID(), now, time.Time{}, true); err != nil {
			t.Fatalf("run %d: %v", i+1, err)
		}
		if _, err := SendPending(ctx, st, zerolog.Nop(), wh); err != nil {
			t.Fatalf("run %d: %v", i+1, err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	var commitments []map[string]any
	for i, m := range posts {
		if m["kind"] == "commitment" {
			commitments = append(commitments, m)
			if keys[i] != "commitment:ent-pool:2026-09-01" {
				t.Errorf("alert key %q", keys[i])
			}
		}
	}
	if len(commitments) != 1 {
		t.Fatalf("commitment alerts posted over two runs: %v; want the pool's, once", commitments)
	}
	m := commitments[0]
	for k, want := range map[string]any{
		"commitment": "Encoding pool 2026", "entitlement": "ent-pool", "type": "spend", "currency": "USD", "month": "2026-10",
		"committed": "1000.00", "drawn_month": "200.00", "drawn_to_date": "350.00", "remaining": "650.00",
		"runs_out": "2026-12-24", "used_up": false, "start": "2026-09-01", "end": "2026-12-31",
		"pace_from": "2026-10-01", "pace_through": "2026-10-20", "scope": "entitlement:ent-pool",
		"text": `Tally: commitment "Encoding pool 2026" (entitlement ent-pool, 1000.00 USD, 2026-09-01 to 2026-12-31) runs out on 2026-12-24 at 2026-10's pace, before its end: 350.00 USD drawn to date, 200.00 in 2026-10 through 2026-10-20.`,
	} {
		if m[k] != want {
			t.Errorf("alert %s = %v, want %v", k, m[k], want)
		}
	}
}
