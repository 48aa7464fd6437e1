package alerts

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/tally-dev/tally"
	"github.com/tally-dev/tally/configs"
	"github.com/tally-dev/tally/internal/retry"
	"github.com/tally-dev/tally/internal/secret"
)

// SignatureHeader carries sha256=<hex HMAC-SHA256 of the body> when the
// webhook has a secret, so the receiver can check the body came from Tally
// unchanged.
const SignatureHeader = "X-Tally-Signature"

// Webhook posts alerts as JSON to one address.
type Webhook struct {
	url     string
	name    string       // scheme://host: the address may hold a secret in its path
	secret  secret.Value // zero: bodies go unsigned
	client  *http.Client
	agent   string
	Tries   int           // attempts per alert in one run
	Pause   time.Duration // before the second try, doubled after each
	Timeout time.Duration // per attempt
}

// NewWebhook checks cfg's address and signs with sec, the signing secret
// configs read (WebhookConfig.Secret); zero sends bodies unsigned.
func NewWebhook(cfg *configs.WebhookConfig, sec secret.Value, version string) (*Webhook, error) {
	u, err := tally.CheckSinkURL(cfg.URL)
	if err != nil {
		return nil, fmt.Errorf("alerts.webhook.url %w", err)
	}
	// Its path and query are a secret (a Slack-style address is its own
	// credential): a receiver naming them in an error must not get them logged.
	secret.RegisterURL(cfg.URL)
	return &Webhook{url: cfg.URL, name: tally.SinkName(u), secret: sec, client: &http.Client{}, agent: "tally/" + version,
		Tries: 3, Pause: 2 * time.Second, Timeout: cfg.Timeout}, nil
}

// Name is the sink as logs and errors show it: webhook:scheme://host.
func (w *Webhook) Name() string { return "webhook:" + w.name }

// Sign is the signature header's value for body.
func Sign(secret, body []byte) string {
	m := hmac.New(sha256.New, secret)
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// Send posts body, trying again after a network error, a 429 or a 5xx.
// Other answers are final: a 4xx will not change by trying again.
func (w *Webhook) Send(ctx context.Context, key string, body []byte) error {
	err := retry.Do(ctx, w.Tries, w.Pause, func() (bool, error) { return w.post(ctx, key, body) })
	if err != nil && ctx.Err() == nil {
		return fmt.Errorf("%s: %w", w.Name(), err)
	}
	return err
}

func (w *Webhook) post(ctx context.Context, key string, body []byte) (again bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, w.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.url, bytes.NewReader(body))
	if err != nil {
		return false, errors.New("cannot build the request")
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", w.agent)
	req.Header.Set("X-Tally-Alert", key)
	if !w.secret.IsZero() {
		req.Header.Set(SignatureHeader, Sign([]byte(w.secret.Reveal()), body))
	}
	resp, err := w.client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // the error names the whole address, which may hold a secret
		}
		return true, fmt.Errorf("post failed: %v", err)
	}
	defer resp.Body.Close()
	// Redacted before it is cut short: a receiver quoting the address
	// could otherwise leave a secret's first half at the cut.
	answer, _ := io.ReadAll(io.LimitReader(resp.Body, 16<<10))
	if resp.StatusCode/100 == 2 {
		return false, nil
	}
	again = resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500
	snippet := strings.ToValidUTF8(secret.Redact(strings.TrimSpace(string(answer))), "?")
	if len(snippet) > 200 {
		snippet = strings.ToValidUTF8(snippet[:200], "") + "…"
	}
	return again, fmt.Errorf("answered %s: %s", resp.Status, snippet)
}
