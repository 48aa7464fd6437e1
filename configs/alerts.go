package configs

import (
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/tally-dev/tally"
)

type rawBudget struct {
	Name     at[string]        `yaml:"name"`
	Scope    at[string]        `yaml:"scope"`
	Currency at[string]        `yaml:"currency"`
	Amount   at[tally.Decimal] `yaml:"amount"`
	Actual   list              `yaml:"actual"`
	Forecast list              `yaml:"forecast"`
}

type rawAnomalies struct {
	MADs       at[tally.Decimal] `yaml:"mads"`
	MinAmount  at[tally.Decimal] `yaml:"min_amount"`
	MinPercent at[tally.Decimal] `yaml:"min_percent"`
}

type rawAlerts struct {
	Webhook rawWebhook `yaml:"webhook"`
}

type rawWebhook struct {
	URL        at[string]        `yaml:"url"`
	SecretEnv  at[string]        `yaml:"secret_env"`
	SecretFile at[string]        `yaml:"secret_file"`
	Timeout    at[time.Duration] `yaml:"timeout"`
}

var currencyRE = regexp.MustCompile(`^[A-Z]{3}$`)

// scopeKinds are what a budget may cover besides all.
var scopeKinds = []string{"project", "payment_method", "family", "organization", "cost_centre"}

// budgets reads the budgets list; left out, there are none.
func (p *parser) budgets(r *[]rawBudget, c *[]Budget) {
	if r == nil {
		return
	}
	names := map[string]bool{}
	for _, i := range listed(p, r, "budgets", true) {
		*c = append(*c, p.budget(&(*r)[i], names))
	}
}

// budget reads one of budgets; names are the budgets' names so far.
func (p *parser) budget(rb *rawBudget, names map[string]bool) Budget {
	b := Budget{
		Name:     p.text(rb.Name, ""),
		Currency: p.text(rb.Currency, ""),
	}
	switch {
	case b.Name == "":
		p.bad(rb.Name.key, "missing; give the budget a name, e.g. platform")
	case names[b.Name]:
		p.bad(rb.Name.key, "%q is the name of another budget; names must be unique", b.Name)
	case strings.ContainsAny(b.Name, ":\n"):
		p.bad(rb.Name.key, "%q holds a colon or a line break; use letters, digits, spaces, - or _", b.Name)
	}
	names[b.Name] = true
	p.budgetScope(rb, &b)
	if !currencyRE.MatchString(b.Currency) {
		p.bad(rb.Currency.key, "%q is not a currency code of three capital letters, e.g. USD; a budget is in one currency, as costs are never summed across them", b.Currency)
	}
	// The amount has no default: left out, or not a single value
	// (reported by has), its text "" is refused too.
	p.has(rb.Amount.key)
	if d := rb.Amount.V; !rb.Amount.ok || d.Sign() <= 0 || d.Cmp(maxAmount) > 0 || !whole(d, budgetDecimals) {
		p.bad(rb.Amount.key, "%q is not an amount above 0 and at most %s (10^15) with at most %d decimal places (alerts state it in cents), e.g. 5000 or 1250.50", rb.Amount.S, maxAmount, budgetDecimals)
	} else {
		b.Amount = d
	}
	b.Actual = p.percents(rb.Actual, []int{80, 100})
	b.Forecast = p.percents(rb.Forecast, []int{100})
	return b
}

// budgetScope reads a budget's scope: all, or kind:name.
func (p *parser) budgetScope(rb *rawBudget, b *Budget) {
	scope := p.text(rb.Scope, "all")
	if scope == "all" {
		b.ScopeKind = "all"
		return
	}
	kind, name, ok := strings.Cut(scope, ":")
	if !ok || !slices.Contains(scopeKinds, kind) || strings.TrimSpace(name) == "" {
		p.bad(rb.Scope.key, "%q is not all, project:NAME, payment_method:ID, family:NAME, organization:NAME or cost_centre:NAME", scope)
		return
	}
	b.ScopeKind, b.Scope = kind, strings.TrimSpace(name)
	if kind == "organization" && len(p.orgNames) > 0 && !slices.Contains(p.orgNames, b.Scope) {
		p.bad(rb.Scope.key, "organization %q is not in organizations: (%s)", b.Scope, strings.Join(p.orgNames, ", "))
	}
}

// budgetCentres checks that a budget of scope cost_centre:NAME names a
// cost centre of allocation.cost_centres.
func (p *parser) budgetCentres(r *[]rawBudget, budgets []Budget, a tally.Allocation) {
	var names []string
	for _, c := range a.CostCentres {
		names = append(names, c.Name)
	}
	// budgets holds one budget for each of r's entries, in order.
	for j, i := range listed(p, r, "budgets", true) {
		b := budgets[j]
		if b.ScopeKind != "cost_centre" || slices.Contains(names, b.Scope) {
			continue
		}
		known := "none is configured"
		if len(names) > 0 {
			known = "they are " + strings.Join(names, ", ")
		}
		p.bad((*r)[i].Scope.key, "%q names no cost centre of allocation.cost_centres (%s)", b.ScopeText(), known)
	}
}

// percents reads a list of thresholds in percent of a budget; left out,
// def; an empty list means none.
func (p *parser) percents(n list, def []int) []int {
	if !n.given() {
		return def
	}
	out := []int{}
	for _, s := range p.list(n, func(s string) string {
		if v, err := strconv.Atoi(strings.TrimSuffix(s, "%")); err != nil || v < 1 || v > 1000 {
			return "is not a percentage from 1 to 1000, e.g. 80"
		}
		return ""
	}) {
		v, _ := strconv.Atoi(strings.TrimSuffix(s, "%"))
		out = append(out, v)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// The bounds of the config's amounts and thresholds. A figure outside them
// is a typo (1e400, 0.0000000000001), refused at load rather than printed
// as 400 digits or as a budget of 0.00.
var (
	// maxAmount bounds every amount in a currency (budgets[].amount,
	// anomalies.min_amount): more than any month's cost.
	maxAmount = tally.MustDecimal("1000000000000000")
	// maxMADs bounds anomalies.mads: a day beyond 100 scaled MADs of its
	// median is an anomaly under any smaller setting too.
	maxMADs = tally.MustDecimal("100")
	// maxMinPercent bounds anomalies.min_percent: a day at 100 times its
	// median.
	maxMinPercent = tally.MustDecimal("10000")
)

// budgetDecimals is the most decimal places of a budget's amount: alerts,
// the workbook and status state it in cents, so an amount finer than that
// would be announced as another figure.
const budgetDecimals = 2

// whole reports whether d has no non-zero digit past places decimals.
func whole(d tally.Decimal, places int) bool {
	_, err := d.Scaled(places)
	return err == nil
}

func (p *parser) anomalies(r *rawAnomalies, c *AnomalyConfig) {
	c.MADs = p.amount(r.MADs, DefaultAnomalyMADs, maxMADs, "a number of MADs above 0 and at most 100 with at most 6 decimals, e.g. 4")
	c.MinAmount = p.amount(r.MinAmount, DefaultAnomalyMin, maxAmount, "an amount from 0 to 1000000000000000 (10^15) with at most 6 decimals, e.g. 10")
	c.MinPercent = p.amount(r.MinPercent, DefaultAnomalyPercent, maxMinPercent, "a percentage from 0 to 10000 with at most 6 decimals, e.g. 50")
	if c.MADs.Sign() == 0 {
		p.bad(r.MADs.key, "is 0; every day above its median would be an anomaly; use a number above 0 and at most 100, e.g. 4")
	}
}

// amount reads a decimal from 0 to hi of at most 6 decimals.
func (p *parser) amount(a at[tally.Decimal], def string, hi tally.Decimal, allowed string) tally.Decimal {
	if !p.has(a.key) || a.S == "" {
		return tally.MustDecimal(def)
	}
	if d := a.V; !a.ok || d.Sign() < 0 || d.Cmp(hi) > 0 || !whole(d, 6) {
		p.bad(a.key, "%q is not %s", a.S, allowed)
		return tally.MustDecimal(def)
	}
	return a.V
}

func (p *parser) alerts(r *rawAlerts, c *AlertsConfig) {
	w := &r.Webhook
	u := p.text(w.URL, "")
	if u == "" {
		for _, n := range []*yaml.Node{w.SecretEnv.n, w.SecretFile.n, w.Timeout.n} {
			if !isNull(n) {
				p.addf(n, w.URL.path, "missing; the address to post alerts to, e.g. https://hooks.slack.com/services/…")
				break
			}
		}
		return
	}
	h := &WebhookConfig{
		URL:        u,
		SecretEnv:  p.text(w.SecretEnv, ""),
		SecretFile: p.text(w.SecretFile, ""),
		Timeout:    p.duration(w.Timeout, DefaultWebhookTimeout, true, 5*time.Minute, "10s"),
	}
	if _, err := tally.CheckSinkURL(u); err != nil {
		p.bad(w.URL.key, "%v", err)
	}
	if h.SecretEnv != "" && h.SecretFile != "" {
		p.addf(w.SecretFile.n, "alerts.webhook.secret_env and secret_file", "set one, not both")
	}
	if h.SecretEnv != "" && !envNameRE.MatchString(h.SecretEnv) {
		p.bad(w.SecretEnv.key, "%q is not an environment variable name", h.SecretEnv)
	}
	if h.SecretFile != "" {
		h.SecretFile = p.path(h.SecretFile)
	}
	c.Webhook = h
}
