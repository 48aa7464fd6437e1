package configs

import (
	"strings"
	"testing"
	"time"

	"github.com/tally-dev/tally"
)

func TestParseBudgetsAndAlerts(t *testing.T) {
	cfg, err := Parse([]byte(minimal+`budgets:
  - name: platform
    currency: USD
    amount: 5000.50
  - name: news
    scope: project:newsroom
    currency: EUR
    amount: 900
    actual: [50%, 90, 50]
    forecast: []
anomalies:
  mads: 3.5
alerts:
  webhook:
    url: https://hooks.example.com/services/T0/B0/XYZ?x=1
    secret_file: hook.secret
`), "/etc/tally", env())
	if err != nil {
		t.Fatal(err)
	}
	b := cfg.Budgets
	if len(b) != 2 || b[0].ScopeText() != "all" || b[0].Amount.String() != "5000.50" ||
		len(b[0].Actual) != 2 || b[0].Actual[0] != 80 || b[0].Forecast[0] != 100 {
		t.Errorf("budget 0: %+v", b[0])
	}
	if b[1].ScopeKind != "project" || b[1].Scope != "newsroom" || b[1].ScopeText() != "project:newsroom" ||
		len(b[1].Actual) != 2 || b[1].Actual[0] != 50 || b[1].Actual[1] != 90 || len(b[1].Forecast) != 0 {
		t.Errorf("budget 1: %+v", b[1])
	}
	if cfg.Anomalies.MADs.Cmp(tally.MustDecimal("3.5")) != 0 || cfg.Anomalies.MinAmount.Cmp(tally.MustDecimal("1")) != 0 {
		t.Errorf("anomalies %+v", cfg.Anomalies)
	}
	w := cfg.Alerts.Webhook
	if w == nil || w.SecretFile != "/etc/tally/hook.secret" || w.Timeout != 10*time.Second {
		t.Errorf("webhook %+v", w)
	}
}

// A webhook address often carries its own secret in its path: a problem
// with it shows the scheme and host only.
func TestWebhookURLNotRepeated(t *testing.T) {
	_, err := Parse([]byte(minimal+"alerts:\n  webhook:\n    url: http://hooks.example.com/services/T000/SECRETPATH\n"), "/etc/tally", env())
	if err == nil || strings.Contains(err.Error(), "SECRETPATH") || !strings.Contains(err.Error(), "alerts.webhook.url") {
		t.Fatalf("error %v", err)
	}
}
