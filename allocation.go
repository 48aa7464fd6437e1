package tally

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"
	"time"
)

// Allocation methods: how a shared charge is split across its receivers.
const (
	AllocateEven         = "even"         // equal parts
	AllocateFixed        = "fixed"        // agreed percentages, summing to 100
	AllocateProportional = "proportional" // to each receiver's own (direct) usage value in the month and currency
	AllocateDriver       = "driver"       // to each receiver's quantity of a named meter in the month
)

// AllocationMethods lists the methods, in the order messages name them.
var AllocationMethods = []string{AllocateEven, AllocateFixed, AllocateProportional, AllocateDriver}

// Unallocated is the cost centre of cost no rule and no owner reaches:
// nothing is dropped, so cost centres plus Unallocated are the month.
const Unallocated = "Unallocated"

// Allocation is chargeback: which cost centre owns which projects, and
// which costs are shared across cost centres by which rule. The config
// reads it (allocation), the store keeps it for the analysts' views, a
// close freezes the rules in force for its month.
type Allocation struct {
	CostCentres []CostCentre
	Rules       []AllocationRule
}

// CostCentre is a team costs are charged back to: the projects it owns
// (their cost is its direct cost) and who receives its statement.
type CostCentre struct {
	Name     string
	Owner    string // e-mail address; "" for none
	Projects []string
}

// AllocationRule shares the charges it selects across its receivers from
// a month on. A charge is selected when it matches every selector given
// (Projects, Meters, Families, PaymentMethod); the first rule in force
// that selects a charge takes it. A later entry of the same Name with a
// later From replaces it from that month, so a change never rewrites the
// past.
type AllocationRule struct {
	Name          string
	From          time.Time // 1st of the month, UTC
	Projects      []string
	Meters        []string
	Families      []string
	PaymentMethod string
	Receivers     []string  // cost centre names, in the order given
	Method        string    // one of AllocationMethods
	Percent       []Decimal // fixed: each receiver's percent, aligned with Receivers
	Driver        string    // driver: the meter whose quantity weighs the receivers
}

// Version names one entry of a rule: its name and the month it takes
// effect, e.g. platform@2026-01.
func (r AllocationRule) Version() string { return r.Name + "@" + r.From.Format("2006-01") }

// Empty reports whether no cost centre is configured: chargeback is off.
func (a Allocation) Empty() bool { return len(a.CostCentres) == 0 }

// InForce returns the rules that apply to month (the 1st, UTC): of each
// rule name, the entry with the latest From not after month, in the
// order of the config.
func (a Allocation) InForce(month time.Time) []AllocationRule {
	best := map[string]int{}
	for i, r := range a.Rules {
		if r.From.After(month) {
			continue
		}
		if j, ok := best[r.Name]; !ok || r.From.After(a.Rules[j].From) {
			best[r.Name] = i
		}
	}
	var out []AllocationRule
	for i, r := range a.Rules {
		if j, ok := best[r.Name]; ok && j == i {
			out = append(out, r)
		}
	}
	return out
}

// Hash is the sha256 of the cost centres and of the rules in force in
// month, in a fixed form: part of a closed month's fingerprint, so a
// change of the rules that would have changed the month shows.
func (a Allocation) Hash(month time.Time) string {
	type rule struct {
		Version, PaymentMethod, Method, Driver string
		Projects, Meters, Families, Receivers  []string
		Percent                                []string
	}
	var doc struct {
		CostCentres []CostCentre
		Rules       []rule
	}
	for _, c := range a.CostCentres {
		c.Projects = slices.Sorted(slices.Values(c.Projects))
		doc.CostCentres = append(doc.CostCentres, c)
	}
	for _, r := range a.InForce(month) {
		p := make([]string, len(r.Percent))
		for i, d := range r.Percent {
			p[i] = d.String()
		}
		doc.Rules = append(doc.Rules, rule{r.Version(), r.PaymentMethod, r.Method, r.Driver, r.Projects, r.Meters, r.Families, r.Receivers, p})
	}
	b, _ := json.Marshal(doc)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
