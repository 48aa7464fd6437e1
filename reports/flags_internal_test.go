package reports

import (
	"database/sql"
	"strings"
	"testing"

	"github.com/tally-dev/tally"
)

// A rate card variance advises a billing query only when part of the
// meter's value is invoiced; a balance draw or a license says what to do
// instead. Its amount is always the variance.
func TestRateCardFlagAdvice(t *testing.T) {
	m := func(s string) money { return money{dec: tally.MustDecimal(s), valid: true} }
	for _, c := range []struct {
		name, invoiced, balance, want, not string
	}{
		{"invoiced", "10", "0", "billing query", "license covers"},
		{"balance", "0", "10", "prepaid balance", "billing query"},
		{"license", "0", "0", "license covers", "raise a billing query"},
	} {
		f := rateCardFlag(rcVariance, "enc", sql.NullString{}, sql.NullString{String: "pm", Valid: true}, sql.NullString{}, "EUR", 3,
			m("10"), m("0.5"), m(c.invoiced), m(c.balance), sql.NullFloat64{Float64: 0.05, Valid: true}, "why")
		if !strings.Contains(f.action, c.want) || strings.Contains(f.action, c.not) {
			t.Errorf("%s: advice %q, want %q and not %q", c.name, f.action, c.want, c.not)
		}
		if f.cost.dec.String() != "0.5" {
			t.Errorf("%s: amount %s, want the variance 0.5", c.name, f.cost.dec)
		}
	}
}
