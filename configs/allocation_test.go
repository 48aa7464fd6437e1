package configs

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/tally-dev/tally"
)

const allocationYAML = minimal + `allocation:
  cost_centres:
    - name: News
      owner: news-finance@example.com
      projects: [newsroom, archive]
    - name: Sport
      projects: [sport-live]
  rules:
    - name: platform
      from: 2026-01
      share: {projects: [platform]}
      to: [News, Sport]
      method: proportional
    - name: platform
      from: 2026-04
      share: {projects: [platform]}
      method: fixed
      percent: {News: 60, Sport: 40}
    - name: egress
      from: 2026-02
      share: {families: [Streaming], meters: [Egress]}
      to: [Sport, News]
      method: driver
      driver: Streaming Minutes
    - name: balance
      from: 2026-01
      share: {payment_method: 0b6f2a4e-5c1d-4e8f-9a3b-7c2d1e0f4a5b}
      to: [News, Sport]
      method: even
`

func TestAllocationParses(t *testing.T) {
	cfg := mustParse(t, allocationYAML, noEnv)
	month := func(s string) time.Time { t, _ := time.Parse("2006-01", s); return t }
	want := tally.Allocation{
		CostCentres: []tally.CostCentre{
			{Name: "News", Owner: "news-finance@example.com", Projects: []string{"newsroom", "archive"}},
			{Name: "Sport", Projects: []string{"sport-live"}},
		},
		Rules: []tally.AllocationRule{
			{Name: "platform", From: month("2026-01"), Projects: []string{"platform"}, Receivers: []string{"News", "Sport"}, Method: "proportional"},
			{Name: "platform", From: month("2026-04"), Projects: []string{"platform"}, Receivers: []string{"News", "Sport"}, Method: "fixed",
				Percent: []tally.Decimal{tally.MustDecimal("60"), tally.MustDecimal("40")}},
			{Name: "egress", From: month("2026-02"), Families: []string{"Streaming"}, Meters: []string{"Egress"}, Receivers: []string{"Sport", "News"}, Method: "driver", Driver: "Streaming Minutes"},
			{Name: "balance", From: month("2026-01"), PaymentMethod: "0b6f2a4e-5c1d-4e8f-9a3b-7c2d1e0f4a5b", Receivers: []string{"News", "Sport"}, Method: "even"},
		},
	}
	if !reflect.DeepEqual(cfg.Allocation, want) {
		t.Fatalf("allocation:\n got %+v\nwant %+v", cfg.Allocation, want)
	}
	// A rule's later entry replaces it from its month on; earlier months
	// keep the earlier entry, and a month before every entry has none.
	versions := func(m string) []string {
		var out []string
		for _, r := range cfg.Allocation.InForce(month(m)) {
			out = append(out, r.Version())
		}
		return out
	}
	for m, w := range map[string][]string{
		"2025-12": nil,
		"2026-01": {"platform@2026-01", "balance@2026-01"},
		"2026-03": {"platform@2026-01", "egress@2026-02", "balance@2026-01"},
		"2026-07": {"platform@2026-04", "egress@2026-02", "balance@2026-01"},
	} {
		if got := versions(m); !reflect.DeepEqual(got, w) {
			t.Errorf("in force in %s: %v, want %v", m, got, w)
		}
	}
	if cfg.Allocation.Hash(month("2026-02")) != cfg.Allocation.Hash(month("2026-03")) || cfg.Allocation.Hash(month("2026-03")) == cfg.Allocation.Hash(month("2026-04")) {
		t.Error("the hash must change exactly when the rules in force change")
	}
}

func TestBudgetOfACostCentre(t *testing.T) {
	cfg := mustParse(t, allocationYAML+"budgets:\n  - {name: news, scope: \"cost_centre:News\", currency: USD, amount: 900}\n", noEnv)
	if b := cfg.Budgets[0]; b.ScopeKind != "cost_centre" || b.Scope != "News" || b.ScopeText() != "cost_centre:News" {
		t.Errorf("budget %+v", b)
	}
}

func TestAllocationErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		yml  string
		want []string
	}{
		{"project owned twice", "allocation:\n  cost_centres:\n    - {name: News, projects: [newsroom]}\n    - {name: Sport, projects: [sport, newsroom]}\n", []string{
			`allocation.cost_centres[1].projects[1]: "newsroom" is owned by cost centre "News" already`}},
		{"centre names", "allocation:\n  cost_centres:\n    - {name: News, owner: nobody}\n    - {name: News}\n    - {name: unallocated}\n    - {projects: [x]}\n", []string{
			`allocation.cost_centres[0].owner: "nobody" is not one e-mail address`,
			`allocation.cost_centres[1].name: "News" is the name of another cost centre`,
			`allocation.cost_centres[2].name: "unallocated" is reserved`,
			`allocation.cost_centres[3].name: missing`}},
		{"centre named like a final statement", "allocation:\n  cost_centres:\n    - {name: Final-2 News}\n", []string{
			`allocation.cost_centres[0].name: "Final-2 News" starts with final, which names a closed month's statements`}},
		{"unknown project", "  project_names: [newsroom]\nallocation:\n  cost_centres:\n    - {name: News, projects: [newsrom]}\n  rules:\n    - {name: p, from: 2026-01, share: {projects: [platform]}, to: [News], method: even}\n", []string{
			`allocation.cost_centres[0].projects[0]: "newsrom" is not one of usage.project_names (newsroom)`,
			`allocation.rules[0].share.projects[0]: "platform" is not one of usage.project_names (newsroom)`}},
		{"cost centre shared as a project", "allocation:\n  cost_centres:\n    - {name: News, projects: [newsroom]}\n    - {name: Sport}\n  rules:\n    - {name: p, from: 2026-01, share: {projects: [platform, Sport]}, to: [News, Sport], method: even}\n", []string{
			`allocation.rules[0].share.projects[1]: "Sport" is the name of a cost centre, not a project; the cost centres that receive the shared cost go in to (or percent) (line 8)`}},
		{"owned project shared whole", "allocation:\n  cost_centres:\n    - {name: News, projects: [newsroom]}\n    - {name: Sport}\n  rules:\n    - {name: p, from: 2026-01, share: {projects: [platform, newsroom]}, to: [News, Sport], method: even}\n", []string{
			`allocation.rules[0].share.projects[1]: "newsroom" is owned by cost centre "News" (allocation.cost_centres), and the rule shares it whole, so News would never be charged it directly; remove it from News's projects, or narrow the share with meters, families or payment_method (line 8)`}},
		{"percent not 100", "allocation:\n  cost_centres: [{name: A}, {name: B}]\n  rules:\n    - {name: p, from: 2026-01, share: {projects: [x]}, method: fixed, percent: {A: 60, B: 30}}\n", []string{
			`allocation.rules[0].percent: sums to 90, not 100`}},
		{"percent bad values", "allocation:\n  cost_centres: [{name: A}, {name: B}]\n  rules:\n    - {name: p, from: 2026-01, share: {projects: [x]}, to: [A], method: fixed, percent: {A: 0, C: 100, B: 1.0000001}}\n", []string{
			`allocation.rules[0].percent.A: "0" is not a percent above 0 and up to 100`,
			`allocation.rules[0].percent.C: "C" is not a cost centre of allocation.cost_centres`,
			`allocation.rules[0].percent.B: "1.0000001" is not a percent above 0 and up to 100 with at most 6 decimals`}},
		{"percent without fixed", "allocation:\n  cost_centres: [{name: A}]\n  rules:\n    - {name: p, from: 2026-01, share: {projects: [x]}, to: [A], method: even, percent: {A: 100}}\n", []string{
			`allocation.rules[0].percent: is for method fixed only; method "even" computes the parts`}},
		{"to differs from percent", "allocation:\n  cost_centres: [{name: A}, {name: B}]\n  rules:\n    - {name: p, from: 2026-01, share: {projects: [x]}, to: [A], method: fixed, percent: {A: 50, B: 50}}\n", []string{
			`allocation.rules[0].to: lists A but percent gives A, B`}},
		{"rule problems", "allocation:\n  cost_centres: [{name: A}]\n  rules:\n    - {name: p, from: 2026-13, to: [A, Z], method: split}\n    - {name: q, from: 2026-01, share: {payment_method: abc}, method: even}\n", []string{
			`allocation.rules[0].from: "2026-13" is not a month YYYY-MM`,
			`allocation.rules[0].share: missing; say what the rule shares`,
			`allocation.rules[0].method: "split" is not one of even, fixed, proportional, driver`,
			`allocation.rules[0].to[1]: "Z" is not a cost centre of allocation.cost_centres`,
			`allocation.rules[1].share.payment_method: "abc" is not a payment method id`,
			`allocation.rules[1].to: missing; list the cost centres`}},
		{"same version twice", "allocation:\n  cost_centres: [{name: A}]\n  rules:\n    - {name: p, from: 2026-01, share: {projects: [x]}, to: [A], method: even}\n    - {name: p, from: 2026-01, share: {projects: [y]}, to: [A], method: even}\n", []string{
			`allocation.rules[1].from: rule "p" is given twice from 2026-01`}},
		{"driver", "  meter_names: [Egress]\nallocation:\n  cost_centres: [{name: A}]\n  rules:\n    - {name: p, from: 2026-01, share: {projects: [x]}, to: [A], method: driver}\n    - {name: q, from: 2026-01, share: {projects: [x]}, to: [A], method: driver, driver: Minutes}\n    - {name: r, from: 2026-01, share: {projects: [x]}, to: [A], method: even, driver: Egress}\n", []string{
			`allocation.rules[0].driver: missing; method driver splits by each receiver's quantity of a meter`,
			`allocation.rules[1].driver: "Minutes" is not one of usage.meter_names (Egress)`,
			`allocation.rules[2].driver: is for method driver only, not "even"`}},
		{"rules without centres", "allocation:\n  rules:\n    - {name: p, from: 2026-01, share: {projects: [x]}, to: [A], method: even}\n", []string{
			`allocation.rules: rules without cost centres`}},
		{"budget of an unknown cost centre", "budgets:\n  - {name: a, scope: \"cost_centre:Nws\", currency: USD, amount: 5}\nallocation:\n  cost_centres: [{name: News}]\n", []string{
			`budgets[0].scope: "cost_centre:Nws" names no cost centre of allocation.cost_centres (they are News) (line 4)`}},
		{"unknown key", "allocation:\n  cost_centers: []\n", []string{
			`allocation.cost_centers: unknown key; known keys in allocation: cost_centres, rules; did you mean cost_centres?`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			yml := minimal + tc.yml
			_, err := Parse([]byte(yml), "/etc/tally", noEnv)
			if err == nil {
				t.Fatalf("no error for\n%s", yml)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q:\n%v", w, err)
				}
			}
		})
	}
}

// Sharing part of an owned project (one of its meters) is what rules are
// for, and is kept: only a rule taking the project whole is refused.
func TestAllocationSharesPartOfAnOwnedProject(t *testing.T) {
	cfg := mustParse(t, minimal+"allocation:\n  cost_centres:\n    - {name: News, projects: [newsroom]}\n    - {name: Sport}\n  rules:\n"+
		"    - {name: egress, from: 2026-01, share: {projects: [newsroom], meters: [egress]}, to: [News, Sport], method: even}\n", noEnv)
	if got := cfg.Allocation.Rules[0].Projects; len(got) != 1 || got[0] != "newsroom" {
		t.Errorf("rule projects %v, want [newsroom]", got)
	}
}
