package configs

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestParseCommitments(t *testing.T) {
	cfg := mustParse(t, minimal+`commitments:
  - entitlement: ent-7f3a
    name: Encoding pool 2026
    type: spend
    amount: 120000.50
    currency: USD
    start: 2026-01-01
    end: 2026-12-31
  - entitlement: ent-91c0
    type: usage
    quantity: 500000.125
    unit: Minutes
    start: 2026-04-01
    end: 2027-03-31
  - entitlement: ent-7f3a
    type: spend
    amount: 90000
    currency: USD
    start: 2027-01-01
    end: 2027-01-01
`, noEnv)
	c := cfg.Commitments
	if len(c) != 3 {
		t.Fatalf("%d commitments, want 3: %+v", len(c), c)
	}
	day := func(s string) time.Time { return time.Time(mustDate(t, s)) }
	if c[0].Entitlement != "ent-7f3a" || c[0].Name != "Encoding pool 2026" || c[0].Type != CommitmentSpend ||
		c[0].Amount.String() != "120000.50" || c[0].Currency != "USD" || c[0].Unit != "" || c[0].Quantity.Sign() != 0 ||
		!c[0].Start.Equal(day("2026-01-01")) || !c[0].End.Equal(day("2026-12-31")) || !c[0].Until().Equal(day("2027-01-01")) ||
		c[0].Path != "commitments[0]" || c[0].Period() != "2026-01-01 to 2026-12-31" {
		t.Errorf("spend commitment %+v", c[0])
	}
	if c[1].Type != CommitmentUsage || c[1].Quantity.String() != "500000.125" || c[1].Unit != "Minutes" ||
		c[1].Currency != "" || c[1].Amount.Sign() != 0 || c[1].Name != "" || c[1].Path != "commitments[1]" {
		t.Errorf("usage commitment %+v", c[1])
	}
	// A renewal of the first: the same entitlement, the day after its end,
	// one day long.
	if c[2].Entitlement != "ent-7f3a" || !c[2].Start.Equal(c[2].End) || c[2].Path != "commitments[2]" {
		t.Errorf("renewal %+v", c[2])
	}
	if cfg := mustParse(t, minimal, noEnv); cfg.Commitments != nil {
		t.Errorf("commitments left out: %+v, want none", cfg.Commitments)
	}
}

func mustDate(t *testing.T, s string) date {
	t.Helper()
	var d date
	if err := d.read(s); err != nil {
		t.Fatal(err)
	}
	return d
}

// Every refusal names the key, the value as written and what is allowed.
func TestCommitmentValidation(t *testing.T) {
	spend := "  - entitlement: e1\n    type: spend\n    amount: 100\n    currency: USD\n    start: 2026-01-01\n    end: 2026-12-31\n"
	tests := []struct {
		name, entries string
		want          []string // one fragment a problem
	}{
		{"end before start", "  - {entitlement: e1, type: spend, amount: 100, currency: USD, start: 2026-02-01, end: 2026-01-31}\n", []string{
			`commitments[0].end: "2026-01-31" is before start 2026-02-01; end is the commitment's last day, on or after its first (line 4)`}},
		{"negative amount", "  - {entitlement: e1, type: spend, amount: -5, currency: USD, start: 2026-01-01, end: 2026-12-31}\n", []string{
			`commitments[0].amount: "-5" is not an amount above 0 and at most 1000000000000000 (10^15) with at most 2 decimal places, e.g. 120000 or 4999.50`}},
		{"zero amount", "  - {entitlement: e1, type: spend, amount: 0, currency: USD, start: 2026-01-01, end: 2026-12-31}\n", []string{
			`commitments[0].amount: "0" is not an amount above 0`}},
		{"amount finer than cents", "  - {entitlement: e1, type: spend, amount: 1.005, currency: USD, start: 2026-01-01, end: 2026-12-31}\n", []string{
			`commitments[0].amount: "1.005" is not an amount above 0 and at most 1000000000000000 (10^15) with at most 2 decimal places`}},
		{"spend without amount", "  - {entitlement: e1, type: spend, currency: USD, start: 2026-01-01, end: 2026-12-31}\n", []string{
			`commitments[0].amount: "" is not an amount above 0`}},
		{"spend without currency", "  - {entitlement: e1, type: spend, amount: 100, start: 2026-01-01, end: 2026-12-31}\n", []string{
			`commitments[0].currency: "" is not a currency code of three capital letters, e.g. USD; a spend commitment is an amount in one currency`}},
		{"spend in a lower-case currency", "  - {entitlement: e1, type: spend, amount: 100, currency: usd, start: 2026-01-01, end: 2026-12-31}\n", []string{
			`commitments[0].currency: "usd" is not a currency code of three capital letters`}},
		{"spend with a quantity", "  - {entitlement: e1, type: spend, amount: 100, currency: USD, quantity: 5, unit: GB, start: 2026-01-01, end: 2026-12-31}\n", []string{
			`commitments[0].quantity: is for a usage commitment; a spend commitment has amount and currency (or make type usage) (line 4)`,
			`commitments[0].unit: is for a usage commitment; a spend commitment has amount and currency (or make type usage) (line 4)`}},
		{"usage without unit", "  - {entitlement: e1, type: usage, quantity: 500, start: 2026-01-01, end: 2026-12-31}\n", []string{
			`commitments[0].unit: missing; the unit of quantity, as the charges drawn from the entitlement give it, e.g. Minutes`}},
		{"usage with a negative quantity", "  - {entitlement: e1, type: usage, quantity: -1, unit: GB, start: 2026-01-01, end: 2026-12-31}\n", []string{
			`commitments[0].quantity: "-1" is not a quantity above 0 and at most 1000000000000000 (10^15) with at most 12 decimal places, e.g. 500000`}},
		{"usage with zero quantity", "  - {entitlement: e1, type: usage, quantity: 0, unit: GB, start: 2026-01-01, end: 2026-12-31}\n", []string{
			`commitments[0].quantity: "0" is not a quantity above 0`}},
		{"usage with an amount", "  - {entitlement: e1, type: usage, quantity: 5, unit: GB, amount: 100, currency: USD, start: 2026-01-01, end: 2026-12-31}\n", []string{
			`commitments[0].amount: is for a spend commitment; a usage commitment has quantity and unit (or make type spend)`,
			`commitments[0].currency: is for a spend commitment; a usage commitment has quantity and unit (or make type spend)`}},
		{"unknown type", "  - {entitlement: e1, type: license, amount: 100, currency: USD, start: 2026-01-01, end: 2026-12-31}\n", []string{
			`commitments[0].type: "license" is not one of spend (an amount in a currency), usage (a quantity in a unit) (line 4)`}},
		{"no type", "  - {entitlement: e1, start: 2026-01-01, end: 2026-12-31}\n", []string{
			`commitments[0].type: missing; spend (an amount in a currency, with amount and currency) or usage (a quantity in a unit, with quantity and unit)`}},
		{"no entitlement", "  - {type: spend, amount: 100, currency: USD, start: 2026-01-01, end: 2026-12-31}\n", []string{
			`commitments[0].entitlement: missing; the entitlement's id, as the charges drawn from it give it (usage's entitlement column)`}},
		{"entitlement a list", "  - {entitlement: [a, b], type: spend, amount: 100, currency: USD, start: 2026-01-01, end: 2026-12-31}\n", []string{
			`commitments[0].entitlement: must be a single value, not a list`}},
		{"no dates", "  - {entitlement: e1, type: spend, amount: 100, currency: USD}\n", []string{
			`commitments[0].start: missing; the commitment's first day as YYYY-MM-DD`,
			`commitments[0].end: missing; the commitment's last day (inclusive) as YYYY-MM-DD`}},
		{"not a date", "  - {entitlement: e1, type: spend, amount: 100, currency: USD, start: 2026-13-01, end: soon}\n", []string{
			`commitments[0].start: "2026-13-01" is not a YYYY-MM-DD date (the commitment's first day), e.g. 2026-01-01`,
			`commitments[0].end: "soon" is not a YYYY-MM-DD date (the commitment's last day (inclusive)), e.g. 2026-01-01`}},
		{"overlapping", spend + "  - {entitlement: e1, type: spend, amount: 50, currency: USD, start: 2026-12-31, end: 2027-06-30}\n", []string{
			`commitments[1].entitlement: "e1" is also the entitlement of commitments[0], for 2026-01-01 to 2026-12-31, which overlaps 2026-12-31 to 2027-06-30; one entitlement's commitments must not overlap in time (a renewal starts after the previous one's end) (line 10)`}},
		{"unknown key", "  - {entitlement: e1, type: spend, amount: 100, currency: USD, start: 2026-01-01, ends: 2026-12-31}\n", []string{
			`commitments[0].ends: unknown key; known keys in commitments[0]: entitlement, name, type, amount, currency, quantity, unit, start, end; did you mean end? (line 4)`,
			`commitments[0].end: missing`}},
		{"not a list", "", []string{`commitments: must be a list, not "x"`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			yml := minimal + "commitments:\n" + tc.entries
			if tc.entries == "" {
				yml = minimal + "commitments: x\n"
			}
			_, err := Parse([]byte(yml), "/etc/tally", noEnv)
			var ce *Error
			if !errors.As(err, &ce) {
				t.Fatalf("config:\n%s\nerror %v, want a *configs.Error", yml, err)
			}
			msg := err.Error()
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Errorf("config:\n%s\nerror:\n%s\nwant it to contain %q", yml, msg, w)
				}
			}
			if len(ce.Problems) != len(tc.want) {
				t.Errorf("%d problems, want %d:\n%s", len(ce.Problems), len(tc.want), msg)
			}
		})
	}
}
