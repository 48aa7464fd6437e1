package main

import (
	"os"
	"strings"
	"testing"
)

// tally alerts --dry-run lists what would be sent and sends nothing; tally
// alerts sends it (to the log, the one sink here) and records it, so the
// next dry run lists nothing.
func TestAlertsCommand(t *testing.T) {
	cfg, _ := queryFixture(t, true)
	t.Setenv("TALLY_API_TOKEN", "tok-alerts-test")
	f, err := os.OpenFile(cfg, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("budgets:\n  - name: team-b\n    scope: project:b\n    currency: EUR\n    amount: 4\n    actual: [50]\n    forecast: []\n")
	f.Close()
	line := `Tally: budget "team-b" (project:b, EUR) reached 50% of 4.00 EUR in 2026-02: 3.00 EUR so far, through 2026-02-01 (that day partial).`
	for i, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--dry-run"}, "1 alert(s) would be sent now:\n  " + line},
		{nil, "1 new alert(s):\n  " + line},
		{[]string{"--dry-run"}, "0 alert(s) would be sent now:"},
		{nil, "0 new alert(s):"},
	} {
		// As of the day after the data: the data is not stale then, so
		// the budget is the one alert.
		out, err := execCLI(t, "", append([]string{"alerts", "--config", cfg, "--as-of", "2026-02-02"}, c.args...)...)
		if err != nil {
			t.Fatalf("run %d: %v\n%s", i, err, out)
		}
		if !strings.Contains(out, c.want) || !strings.Contains(out, "team-b  project:b  2026-02  4 EUR   3.00    75.0  3.00") {
			t.Errorf("run %d %v:\n%s\nwant %q", i, c.args, out, c.want)
		}
	}
}
