package alerts

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tally-dev/tally"
	"github.com/tally-dev/tally/configs"
)

func TestCrossedIsExact(t *testing.T) {
	amount := tally.MustDecimal("1000.10")
	for _, c := range []struct {
		x    string
		pct  int
		want bool
	}{
		{"800.08", 80, true}, // exactly 80%
		{"800.079999999999", 80, false},
		{"1000.10", 100, true},
		{"1100.11", 110, true},
		{"0", 1, false},
	} {
		if got := crossed(tally.MustDecimal(c.x), amount, c.pct); got != c.want {
			t.Errorf("crossed(%s, %d%% of %s) = %v", c.x, c.pct, amount, got)
		}
	}
}

func TestCents(t *testing.T) {
	for in, want := range map[string]string{
		"1": "1.00", "2.005": "2.01", "2.004999": "2.00", "-2.005": "-2.01", "12345678901234.2": "12345678901234.20", "0.1": "0.10",
	} {
		if got := cents(tally.MustDecimal(in)); got != want {
			t.Errorf("cents(%s) = %s, want %s", in, got, want)
		}
	}
}

// The webhook signs each body with the secret, retries a 503 and stops at
// a 400, and names itself by scheme and host only.
func TestWebhookSignsAndRetries(t *testing.T) {
	var posts atomic.Int32
	status := atomic.Int32{}
	status.Store(http.StatusServiceUnavailable)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		m := hmac.New(sha256.New, []byte("s3cret"))
		m.Write(body)
		if r.Header.Get(SignatureHeader) != "sha256="+hex.EncodeToString(m.Sum(nil)) || r.Header.Get("X-Tally-Alert") != "k" {
			t.Errorf("headers %v", r.Header)
		}
		if posts.Add(1) < 3 {
			w.WriteHeader(int(status.Load()))
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	cfg := &configs.WebhookConfig{URL: srv.URL + "/hooks/SECRET", SecretEnv: "HOOK", Timeout: time.Second}
	sec, err := cfg.Secret(func(string) string { return " s3cret\n" })
	if err != nil {
		t.Fatal(err)
	}
	h, err := NewWebhook(cfg, sec, "test")
	if err != nil {
		t.Fatal(err)
	}
	h.Pause = time.Millisecond
	if err := h.Send(context.Background(), "k", []byte(`{"text":"x"}`)); err != nil || posts.Load() != 3 {
		t.Fatalf("send: %v after %d posts; want success on the third", err, posts.Load())
	}
	posts.Store(0)
	status.Store(http.StatusBadRequest)
	err = h.Send(context.Background(), "k", []byte(`{}`))
	if err == nil || posts.Load() != 1 || !strings.Contains(err.Error(), "webhook:"+srv.URL) || strings.Contains(err.Error(), "SECRET") {
		t.Fatalf("a 400: %v after %d posts; want one post and an error naming the host only", err, posts.Load())
	}
	if _, err := (&configs.WebhookConfig{URL: srv.URL, SecretEnv: "HOOK", Timeout: time.Second}).Secret(func(string) string { return "" }); err == nil ||
		!strings.Contains(err.Error(), "alerts.webhook.secret_env") {
		t.Errorf("an empty secret variable: %v", err)
	}
}
