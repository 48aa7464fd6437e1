package configs

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/tally-dev/tally"
)

type rawAllocation struct {
	CostCentres *[]rawCostCentre `yaml:"cost_centres"`
	Rules       *[]rawRule       `yaml:"rules"`
}

type rawCostCentre struct {
	Name     at[string] `yaml:"name"`
	Owner    at[string] `yaml:"owner"`
	Projects list       `yaml:"projects"`
}

type rawRule struct {
	Name  at[string] `yaml:"name"`
	From  at[month]  `yaml:"from"`
	Share rawShare   `yaml:"share"`
	To    list       `yaml:"to"`
	// Method is one of tally.AllocationMethods.
	Method at[string] `yaml:"method"`
	// Percent's keys are cost centres, checked against cost_centres.
	Percent mapping    `yaml:"percent"`
	Driver  at[string] `yaml:"driver"`
}

type rawShare struct {
	Projects      list       `yaml:"projects"`
	Meters        list       `yaml:"meters"`
	Families      list       `yaml:"families"`
	PaymentMethod at[string] `yaml:"payment_method"`
}

// allocCheck is what allocation's entries are checked against as they are
// read: the cost centres so far, the project each owns, the rule versions
// seen, and usage's filters.
type allocCheck struct {
	usage    *UsageConfig
	owner    map[string]string // project → cost centre
	centres  map[string]bool
	versions map[string]bool
}

// known says why a project named in allocation has no usage, or "".
func (a *allocCheck) known(project string) string {
	if len(a.usage.ProjectNames) > 0 && !slices.Contains(a.usage.ProjectNames, project) {
		return "is not one of usage.project_names (" + strings.Join(a.usage.ProjectNames, ", ") + "), so it has no usage to charge back"
	}
	return ""
}

// isCentre says why s is not a cost centre, or "".
func (a *allocCheck) isCentre(s string) string {
	if !a.centres[s] {
		return "is not a cost centre of allocation.cost_centres"
	}
	return ""
}

// allocation reads allocation: cost centres, then the rules that share
// costs across them. Everything that can be checked without the month's
// data is checked here; what depends on it (a driver meter nobody used)
// is flagged where the month is reported.
func (p *parser) allocation(r *rawAllocation, usage *UsageConfig, c *tally.Allocation) {
	a := &allocCheck{usage: usage, owner: map[string]string{}, centres: map[string]bool{}, versions: map[string]bool{}}
	if r.CostCentres != nil {
		for _, i := range listed(p, r.CostCentres, "allocation.cost_centres", true) {
			c.CostCentres = append(c.CostCentres, p.costCentre(&(*r.CostCentres)[i], a))
		}
	}
	if r.Rules == nil {
		return
	}
	if len(c.CostCentres) == 0 && len(listed(p, r.Rules, "allocation.rules", false)) > 0 {
		p.addf(nil, "allocation.rules", "rules without cost centres: list allocation.cost_centres first, the rules share costs across them")
		return
	}
	for _, i := range listed(p, r.Rules, "allocation.rules", true) {
		c.Rules = append(c.Rules, p.rule(&(*r.Rules)[i], fmt.Sprintf("allocation.rules[%d]", i), a))
	}
}

// costCentre reads one of allocation.cost_centres and records it in a.
func (p *parser) costCentre(rc *rawCostCentre, a *allocCheck) tally.CostCentre {
	cc := tally.CostCentre{
		Name:  strings.TrimSpace(p.text(rc.Name, "")),
		Owner: p.text(rc.Owner, ""),
	}
	p.centreName(rc.Name.key, cc.Name, a)
	a.centres[cc.Name] = true
	if cc.Owner != "" && (!strings.Contains(cc.Owner, "@") || strings.ContainsAny(cc.Owner, " \n,<>")) {
		p.bad(rc.Owner.key, "%q is not one e-mail address, e.g. news-finance@example.com", cc.Owner)
	}
	cc.Projects = p.list(rc.Projects, a.known)
	for j, pr := range cc.Projects {
		if other, dup := a.owner[pr]; dup {
			p.addf(rc.Projects.n, fmt.Sprintf("%s[%d]", rc.Projects.path, j), "%q is owned by cost centre %q already; a project has one owner (share its cost with a rule instead)", pr, other)
			continue
		}
		a.owner[pr] = cc.Name
	}
	return cc
}

// centreName checks a cost centre's name: it names the statement's file.
func (p *parser) centreName(k key, name string, a *allocCheck) {
	switch {
	case name == "":
		p.bad(k, "missing; give the cost centre a name, e.g. News")
	case a.centres[name]:
		p.bad(k, "%q is the name of another cost centre; names must be unique", name)
	case strings.EqualFold(name, tally.Unallocated):
		p.bad(k, "%q is reserved for the cost no rule or owner reaches; choose another name", name)
	case strings.HasPrefix(strings.ToLower(name), "final"):
		p.bad(k, "%q starts with final, which names a closed month's statements; choose another name", name)
	case strings.ContainsAny(name, ":\n/\\"):
		p.bad(k, "%q holds a colon, a slash or a line break; use letters, digits, spaces, - or _ (it names the statement's file)", name)
	}
}

// rule reads one of allocation.rules: what it shares, how, and with whom.
func (p *parser) rule(rr *rawRule, path string, a *allocCheck) tally.AllocationRule {
	rule := tally.AllocationRule{
		Name:          strings.TrimSpace(p.text(rr.Name, "")),
		Method:        p.text(rr.Method, ""),
		Driver:        p.text(rr.Driver, ""),
		PaymentMethod: p.text(rr.Share.PaymentMethod, ""),
	}
	p.ruleVersion(rr, &rule, a)
	p.ruleShare(rr, path, &rule, a)
	p.ruleMethod(rr, &rule, a)
	p.ruleDriver(rr, &rule, a)
	return rule
}

// ruleVersion reads a rule's name and from, which together name one
// version of it.
func (p *parser) ruleVersion(rr *rawRule, rule *tally.AllocationRule, a *allocCheck) {
	if rule.Name == "" {
		p.bad(rr.Name.key, "missing; give the rule a name, e.g. platform")
	} else if strings.ContainsAny(rule.Name, "@\n") {
		p.bad(rr.Name.key, "%q holds an @ or a line break; use letters, digits, spaces, - or _", rule.Name)
	}
	from := rr.From.S
	if p.has(rr.From.key); !rr.From.ok {
		p.bad(rr.From.key, "%q is not a month YYYY-MM, e.g. 2026-01: the first month the rule applies to", from)
		return
	}
	rule.From = time.Time(rr.From.V)
	if a.versions[rule.Version()] {
		p.bad(rr.From.key, "rule %q is given twice from %s; a rule changes from a later month, as a new entry with a later from", rule.Name, from)
	}
	a.versions[rule.Version()] = true
}

// ruleShare reads what a rule shares: projects, meters, families and/or a
// payment method.
func (p *parser) ruleShare(rr *rawRule, path string, rule *tally.AllocationRule, a *allocCheck) {
	// A cost centre's name among the shared projects is a receiver
	// put in the wrong list: refused whether or not
	// usage.project_names would have caught it.
	rule.Projects = p.list(rr.Share.Projects, func(s string) string {
		if why := a.known(s); why != "" {
			return why
		}
		if a.centres[s] && a.owner[s] == "" {
			return "is the name of a cost centre, not a project; the cost centres that receive the shared cost go in to (or percent)"
		}
		return ""
	})
	rule.Meters = p.list(rr.Share.Meters, nil)
	rule.Families = p.list(rr.Share.Families, nil)
	p.sharedWhole(rr, rule, a)
	if rule.PaymentMethod != "" && !uuidRE.MatchString(rule.PaymentMethod) {
		p.bad(rr.Share.PaymentMethod.key, "%q is not a payment method id (a UUID such as 0b6f2a4e-5c1d-4e8f-9a3b-7c2d1e0f4a5b)", rule.PaymentMethod)
	}
	if meters := a.usage.MeterNames; len(meters) > 0 {
		for j, m := range rule.Meters {
			if !slices.Contains(meters, m) {
				p.addf(rr.Share.Meters.n, fmt.Sprintf("%s[%d]", rr.Share.Meters.path, j), "%q is not one of usage.meter_names (%s), so it has no usage to share", m, strings.Join(meters, ", "))
			}
		}
	}
	if len(rule.Projects)+len(rule.Meters)+len(rule.Families) == 0 && rule.PaymentMethod == "" {
		p.addf(rr.Name.n, path+".share", "missing; say what the rule shares: projects, meters, families and/or payment_method, e.g. {projects: [platform]}")
	}
}

// sharedWhole refuses an owned project a rule shares whole. Such a rule
// takes every charge of it, so the cost centre owning it would never be
// charged it directly: two answers to one question. Sharing part of an
// owned project (its meters, families or payment method) is what rules
// are for.
func (p *parser) sharedWhole(rr *rawRule, rule *tally.AllocationRule, a *allocCheck) {
	if len(rule.Meters)+len(rule.Families) > 0 || rule.PaymentMethod != "" {
		return
	}
	for j, pr := range rule.Projects {
		if o := a.owner[pr]; o != "" {
			p.addf(rr.Share.Projects.n, fmt.Sprintf("%s[%d]", rr.Share.Projects.path, j), "%q is owned by cost centre %q (allocation.cost_centres), and the rule shares it whole, so %s would never be charged it directly; remove it from %s's projects, or narrow the share with meters, families or payment_method", pr, o, o, o)
		}
	}
}

// ruleMethod reads a rule's method and the cost centres that receive its
// share: to, or with method fixed percent.
func (p *parser) ruleMethod(rr *rawRule, rule *tally.AllocationRule, a *allocCheck) {
	switch rule.Method {
	case tally.AllocateEven, tally.AllocateProportional, tally.AllocateDriver, tally.AllocateFixed:
	case "":
		p.bad(rr.Method.key, "missing; one of %s", strings.Join(tally.AllocationMethods, ", "))
	default:
		p.bad(rr.Method.key, "%q is not one of %s", rule.Method, strings.Join(tally.AllocationMethods, ", "))
	}
	rule.Receivers = p.list(rr.To, a.isCentre)
	if rule.Method == tally.AllocateFixed {
		p.fixedPercent(rr, rule, a.isCentre)
	} else if rr.Percent.given() {
		p.bad(rr.Percent.key, "is for method fixed only; method %q computes the parts", rule.Method)
	}
	if len(rule.Receivers) == 0 && rule.Method != tally.AllocateFixed && (!rr.To.given() || len(rr.To.n.Content) == 0) {
		p.bad(rr.To.key, "missing; list the cost centres that receive the shared cost, e.g. [News, Sport]")
	}
}

// ruleDriver checks a rule's driver: the meter method driver splits by.
func (p *parser) ruleDriver(rr *rawRule, rule *tally.AllocationRule, a *allocCheck) {
	meters := a.usage.MeterNames
	switch {
	case rule.Method == tally.AllocateDriver && rule.Driver == "":
		p.bad(rr.Driver.key, "missing; method driver splits by each receiver's quantity of a meter: name it, e.g. \"Streaming Egress\"")
	case rule.Method != tally.AllocateDriver && rule.Driver != "":
		p.bad(rr.Driver.key, "is for method driver only, not %q", rule.Method)
	case rule.Driver != "" && len(meters) > 0 && !slices.Contains(meters, rule.Driver):
		p.bad(rr.Driver.key, "%q is not one of usage.meter_names (%s), so no receiver has a quantity of it", rule.Driver, strings.Join(meters, ", "))
	}
}

// fixedPercent reads a fixed rule's percent: a mapping of cost centre to
// percent summing to exactly 100. It gives the receivers; to, when given
// too, must name the same cost centres.
func (p *parser) fixedPercent(rr *rawRule, rule *tally.AllocationRule, isCentre func(string) string) {
	n := rr.Percent.n
	if isNull(n) {
		p.bad(rr.Percent.key, "missing; method fixed needs each receiver's percent, summing to 100, e.g. {News: 60, Sport: 40}")
		return
	}
	if n.Kind != yaml.MappingNode {
		p.bad(rr.Percent.key, "must be a mapping of cost centre to percent, e.g. {News: 60, Sport: 40}, not %s", describe(n))
		return
	}
	var names []string
	sum := tally.MustDecimal("0")
	ok := true
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := deref(n.Content[i])
		d, good := p.percentPart(k, deref(n.Content[i+1]), join(rr.Percent.path, k.Value), names, isCentre)
		if !good {
			ok = false
			continue
		}
		names = append(names, k.Value)
		rule.Percent = append(rule.Percent, d)
		sum = sum.Add(d)
	}
	if ok && sum.Cmp(tally.MustDecimal("100")) != 0 {
		p.bad(rr.Percent.key, "sums to %s, not 100; the parts of a fixed split must add up to the whole", sum)
	}
	if len(rule.Receivers) > 0 {
		a, b := slices.Sorted(slices.Values(rule.Receivers)), slices.Sorted(slices.Values(names))
		if !slices.Equal(a, b) {
			p.bad(rr.To.key, "lists %s but percent gives %s; with method fixed leave to out, or name the same cost centres", strings.Join(a, ", "), strings.Join(b, ", "))
		}
	}
	rule.Receivers = names
}

// percentPart reads one entry of a fixed rule's percent, cost centre k to
// percent v, at field; names are the cost centres given so far.
func (p *parser) percentPart(k, v *yaml.Node, field string, names []string, isCentre func(string) string) (tally.Decimal, bool) {
	if why := isCentre(k.Value); why != "" {
		p.addf(k, field, "%q %s", k.Value, why)
		return tally.Decimal{}, false
	}
	if slices.Contains(names, k.Value) {
		p.addf(k, field, "given twice")
		return tally.Decimal{}, false
	}
	s := ""
	if p.single(v, field) {
		s = v.Value
	}
	d, err := tally.ParseDecimal(s)
	if err != nil || d.Sign() <= 0 || d.Cmp(tally.MustDecimal("100")) > 0 || d.Scale() > 6 {
		p.addf(v, field, "%q is not a percent above 0 and up to 100 with at most 6 decimals, e.g. 60 or 33.333334", s)
		return tally.Decimal{}, false
	}
	return d, true
}
