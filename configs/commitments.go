package configs

import (
	"fmt"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/tally-dev/tally"
)

// Commitment types (commitments[].type).
const (
	CommitmentSpend = "spend" // an amount in a currency (FOCUS's Spend category)
	CommitmentUsage = "usage" // a quantity in a unit (FOCUS's Usage category)
)

// Commitment is one entry of commitments: what was bought under an
// entitlement, which the interface names on the charges drawn from it
// (usage's entitlement column) but never states the size of.
type Commitment struct {
	// Entitlement is the entitlement's id, as usage's entitlement column
	// gives it. Whether the loaded usage holds it is known only to what
	// reads the database: the export (and the workbook) say so.
	Entitlement string
	Name        string // "" when not given
	Type        string // CommitmentSpend or CommitmentUsage
	// Amount and Currency: a spend commitment's size; zero and "" on a
	// usage one.
	Amount   tally.Decimal
	Currency string
	// Quantity and Unit: a usage commitment's size; zero and "" on a
	// spend one.
	Quantity tally.Decimal
	Unit     string
	// Start and End are its first and last day (End inclusive, as a
	// contract states it), midnight UTC; Until is the day after End.
	Start, End time.Time
	// Path is where the config names it (commitments[0]), for messages.
	Path string
}

// Until is the exclusive end of the commitment's period: the day after
// its last day, as FOCUS's ContractCommitmentPeriodEnd is.
func (c Commitment) Until() time.Time { return c.End.AddDate(0, 0, 1) }

// Period is the commitment's period as written: start to end, inclusive.
func (c Commitment) Period() string {
	return c.Start.Format(tally.DateLayout) + " to " + c.End.Format(tally.DateLayout)
}

type rawCommitment struct {
	Entitlement at[string]        `yaml:"entitlement"`
	Name        at[string]        `yaml:"name"`
	Type        at[string]        `yaml:"type"`
	Amount      at[tally.Decimal] `yaml:"amount"`
	Currency    at[string]        `yaml:"currency"`
	Quantity    at[tally.Decimal] `yaml:"quantity"`
	Unit        at[string]        `yaml:"unit"`
	Start       at[date]          `yaml:"start"`
	End         at[date]          `yaml:"end"`
}

// quantityDecimals is the most decimal places of a usage commitment's
// quantity: those of the export's quantities (DECIMAL(38, 12)).
const quantityDecimals = 12

// commitments reads the commitments list; left out, there are none.
func (p *parser) commitments(r *[]rawCommitment, c *[]Commitment) {
	for _, i := range listed(p, r, "commitments", true) {
		rc := &(*r)[i]
		cm, ok := p.commitment(rc)
		cm.Path = fmt.Sprintf("commitments[%d]", i)
		if !ok {
			continue
		}
		// One entitlement may be committed again for a later period (a
		// renewal), never twice for the same day: a charge would draw on
		// two sizes.
		for _, o := range *c {
			if o.Entitlement == cm.Entitlement && !cm.Start.After(o.End) && !o.Start.After(cm.End) {
				p.bad(rc.Entitlement.key, "%q is also the entitlement of %s, for %s, which overlaps %s; one entitlement's commitments must not overlap in time (a renewal starts after the previous one's end)",
					cm.Entitlement, o.Path, o.Period(), cm.Period())
				ok = false
				break
			}
		}
		if ok {
			*c = append(*c, cm)
		}
	}
}

// commitment reads one of commitments; ok is false when it has a problem
// (reported).
func (p *parser) commitment(rc *rawCommitment) (Commitment, bool) {
	before := len(p.problems)
	cm := Commitment{
		Entitlement: strings.TrimSpace(p.text(rc.Entitlement, "")),
		Name:        p.text(rc.Name, ""),
		Type:        p.text(rc.Type, ""),
	}
	if cm.Entitlement == "" && scalarOrNone(rc.Entitlement.key) {
		p.bad(rc.Entitlement.key, "missing; the entitlement's id, as the charges drawn from it give it (usage's entitlement column)")
	}
	p.notEmpty(rc.Name, "leave name out, or give the commitment a name, e.g. Encoding pool 2026")
	if strings.ContainsAny(cm.Name, "\n\r") {
		p.bad(rc.Name.key, "%q holds a line break; give the commitment a name on one line", cm.Name)
	}
	switch cm.Type {
	case "":
		if scalarOrNone(rc.Type.key) { // else not a single value: reported
			p.bad(rc.Type.key, "missing; spend (an amount in a currency, with amount and currency) or usage (a quantity in a unit, with quantity and unit)")
		}
	case CommitmentSpend:
		p.spendCommitment(rc, &cm)
	case CommitmentUsage:
		p.usageCommitment(rc, &cm)
	default:
		p.bad(rc.Type.key, "%q is not one of spend (an amount in a currency), usage (a quantity in a unit)", cm.Type)
	}
	cm.Start = p.commitmentDay(rc.Start, "first day")
	cm.End = p.commitmentDay(rc.End, "last day (inclusive)")
	if !cm.Start.IsZero() && !cm.End.IsZero() && cm.End.Before(cm.Start) {
		p.bad(rc.End.key, "%q is before start %s; end is the commitment's last day, on or after its first", rc.End.S, cm.Start.Format(tally.DateLayout))
	}
	return cm, len(p.problems) == before
}

// spendCommitment reads a spend commitment's amount and currency, and
// refuses a usage commitment's keys on it.
func (p *parser) spendCommitment(rc *rawCommitment, cm *Commitment) {
	p.has(rc.Amount.key)
	if d := rc.Amount.V; !rc.Amount.ok || d.Sign() <= 0 || d.Cmp(maxAmount) > 0 || !whole(d, budgetDecimals) {
		p.bad(rc.Amount.key, "%q is not an amount above 0 and at most %s (10^15) with at most %d decimal places, e.g. 120000 or 4999.50; a spend commitment states what was bought, in currency", rc.Amount.S, maxAmount, budgetDecimals)
	} else {
		cm.Amount = d
	}
	cm.Currency = p.text(rc.Currency, "")
	if !currencyRE.MatchString(cm.Currency) {
		p.bad(rc.Currency.key, "%q is not a currency code of three capital letters, e.g. USD; a spend commitment is an amount in one currency", cm.Currency)
	}
	for _, k := range []key{rc.Quantity.key, rc.Unit.key} {
		if k.given() {
			p.bad(k, "is for a usage commitment; a spend commitment has amount and currency (or make type usage)")
		}
	}
}

// usageCommitment reads a usage commitment's quantity and unit, and
// refuses a spend commitment's keys on it.
func (p *parser) usageCommitment(rc *rawCommitment, cm *Commitment) {
	p.has(rc.Quantity.key)
	if d := rc.Quantity.V; !rc.Quantity.ok || d.Sign() <= 0 || d.Cmp(maxAmount) > 0 || !whole(d, quantityDecimals) {
		p.bad(rc.Quantity.key, "%q is not a quantity above 0 and at most %s (10^15) with at most %d decimal places, e.g. 500000; a usage commitment states what was bought, in unit", rc.Quantity.S, maxAmount, quantityDecimals)
	} else {
		cm.Quantity = d
	}
	cm.Unit = strings.TrimSpace(p.text(rc.Unit, ""))
	if cm.Unit == "" && scalarOrNone(rc.Unit.key) {
		p.bad(rc.Unit.key, "missing; the unit of quantity, as the charges drawn from the entitlement give it, e.g. Minutes")
	}
	for _, k := range []key{rc.Amount.key, rc.Currency.key} {
		if k.given() {
			p.bad(k, "is for a spend commitment; a usage commitment has quantity and unit (or make type spend)")
		}
	}
}

// commitmentDay reads a commitment's start or end, a required date.
func (p *parser) commitmentDay(a at[date], what string) time.Time {
	s, ok := a.S, p.has(a.key)
	switch {
	case !a.given() || (ok && s == ""):
		p.bad(a.key, "missing; the commitment's %s as YYYY-MM-DD, e.g. 2026-01-01", what)
	case !ok: // not a single value: reported
	case !a.ok:
		p.bad(a.key, "%q is not a YYYY-MM-DD date (the commitment's %s), e.g. 2026-01-01", s, what)
	default:
		return time.Time(a.V)
	}
	return time.Time{}
}

// scalarOrNone reports whether k is left out or a single value: a key of
// another shape is reported as such, not as missing too.
func scalarOrNone(k key) bool { return !k.given() || k.n.Kind == yaml.ScalarNode }

// Terms are the commitment as the workbook's Commitments sheet and the
// commitment alert measure it (store.CommitmentDraws).
func (c Commitment) Terms() tally.CommitmentTerms {
	t := tally.CommitmentTerms{Entitlement: c.Entitlement, Name: c.Name, Path: c.Path, Start: c.Start, End: c.End}
	if c.Type == CommitmentUsage {
		t.Category, t.Size, t.Unit = tally.CommitmentCategoryUsage, c.Quantity, c.Unit
	} else {
		t.Category, t.Size, t.Currency = tally.CommitmentCategorySpend, c.Amount, c.Currency
	}
	return t
}

// CommitmentTerms are every commitment's Terms, in the config's order.
func (c *Config) CommitmentTerms() []tally.CommitmentTerms {
	out := make([]tally.CommitmentTerms, 0, len(c.Commitments))
	for _, cm := range c.Commitments {
		out = append(out, cm.Terms())
	}
	return out
}
