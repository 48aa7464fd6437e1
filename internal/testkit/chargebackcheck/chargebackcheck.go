package chargebackcheck

import (
	"math/big"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tally-dev/tally"
)

// Line is one part of a charge as the chargeback rules say it
// goes: to a cost centre (or tally.Unallocated), by a method.
type Line struct {
	CostCentre, Currency, Project, Meter, PaidAs, Method string
	Amount, Charge                                       tally.Decimal
}

// Split splits one month's rows (all of that month) by the rules of a
// in force that month, as the docs state them and independently of
// Tally's SQL: the proofs compare the views and the workbook with it. The
// rows are grouped into charges by currency, project, meter, family,
// payment method and paid-as; a charge the first matching rule shares is
// split by weight in units of 10^-12, truncated, the rest to the largest
// weight (then the first receiver by name); any other charge goes to its
// project's cost centre or to Unallocated.
func Split(rows []tally.MeterData, a tally.Allocation, month time.Time) []Line {
	type key struct{ cur, project, meter, family, pm, paidAs string }
	cost, qty := map[key]*big.Int{}, map[key]*big.Int{}
	var keys []key
	for _, r := range rows {
		k := key{r.Currency, r.Project, r.MeterName, r.Family, r.PaymentMethod, PaidAs(r)}
		if cost[k] == nil {
			cost[k], qty[k] = new(big.Int), new(big.Int)
			keys = append(keys, k)
		}
		c, err := r.Cost.Scaled(12)
		if err != nil {
			panic(err)
		}
		cost[k].Add(cost[k], c)
		q, err := tally.MustDecimal(strconv.FormatFloat(r.Quantity, 'f', 12, 64)).Scaled(12)
		if err != nil {
			panic(err)
		}
		qty[k].Add(qty[k], q)
	}
	owner := map[string]string{}
	for _, c := range a.CostCentres {
		for _, p := range c.Projects {
			owner[p] = c.Name
		}
	}
	rules := a.InForce(month)
	in := func(list []string, v string) bool { return len(list) == 0 || slices.Contains(list, v) }
	ruleOf := map[key]int{}
	own := map[[2]string]*big.Int{}    // currency, cost centre → own usage value
	driven := map[[2]string]*big.Int{} // cost centre, meter → quantity
	add := func(m map[[2]string]*big.Int, k [2]string, v *big.Int) {
		if m[k] == nil {
			m[k] = new(big.Int)
		}
		m[k].Add(m[k], v)
	}
	for _, k := range keys {
		ruleOf[k] = -1
		for i, r := range rules {
			if in(r.Projects, k.project) && in(r.Meters, k.meter) && in(r.Families, k.family) && (r.PaymentMethod == "" || r.PaymentMethod == k.pm) {
				ruleOf[k] = i
				break
			}
		}
		if o, ok := owner[k.project]; ok {
			add(driven, [2]string{o, k.meter}, qty[k])
			if ruleOf[k] < 0 {
				add(own, [2]string{k.cur, o}, cost[k])
			}
		}
	}
	dec := func(v *big.Int) tally.Decimal { return tally.NewDecimal(v, 12) }
	var out []Line
	for _, k := range keys {
		line := Line{Currency: k.cur, Project: k.project, Meter: k.meter, PaidAs: k.paidAs, Charge: dec(cost[k])}
		if ruleOf[k] < 0 {
			line.CostCentre, line.Method, line.Amount = tally.Unallocated, "unallocated", dec(cost[k])
			if o, ok := owner[k.project]; ok {
				line.CostCentre, line.Method = o, "direct"
			}
			out = append(out, line)
			continue
		}
		r := rules[ruleOf[k]]
		weigh := func(m map[[2]string]*big.Int, first func(string) [2]string) ([]*big.Int, bool) {
			ws, any := make([]*big.Int, len(r.Receivers)), false
			for i, to := range r.Receivers {
				ws[i] = new(big.Int)
				if v := m[first(to)]; v != nil && v.Sign() > 0 {
					ws[i].Set(v)
					any = true
				}
			}
			return ws, any
		}
		method := r.Method
		var ws []*big.Int
		var ok bool
		switch r.Method {
		case tally.AllocateFixed:
			for _, p := range r.Percent {
				v, _ := p.Scaled(6)
				ws = append(ws, v)
			}
		case tally.AllocateDriver:
			if ws, ok = weigh(driven, func(to string) [2]string { return [2]string{to, r.Driver} }); ok {
				break
			}
			method = tally.AllocateProportional
			fallthrough
		case tally.AllocateProportional:
			if ws, ok = weigh(own, func(to string) [2]string { return [2]string{k.cur, to} }); ok {
				break
			}
			method = tally.AllocateEven
			fallthrough
		case tally.AllocateEven:
			ws = nil
			for range r.Receivers {
				ws = append(ws, big.NewInt(1))
			}
		}
		total := new(big.Int)
		for _, w := range ws {
			total.Add(total, w)
		}
		parts, rest, largest := make([]*big.Int, len(ws)), new(big.Int).Set(cost[k]), 0
		for i, w := range ws {
			parts[i] = new(big.Int).Quo(new(big.Int).Mul(cost[k], w), total)
			rest.Sub(rest, parts[i])
			if c := w.Cmp(ws[largest]); c > 0 || (c == 0 && r.Receivers[i] < r.Receivers[largest]) {
				largest = i
			}
		}
		parts[largest].Add(parts[largest], rest)
		for i, to := range r.Receivers {
			l := line
			l.CostCentre, l.Method, l.Amount = to, method, dec(parts[i])
			out = append(out, l)
		}
	}
	return out
}

var nonLetters = regexp.MustCompile(`[^a-z]`)

// PaidAs is how a row's cost is paid, as the docs define it: direct (no
// entitlement), license, balance (cash, quantity, pre-commitment) or
// other.
func PaidAs(r tally.MeterData) string {
	t := nonLetters.ReplaceAllString(strings.ToLower(r.EntitlementType), "")
	switch {
	case strings.TrimSpace(r.EntitlementType) == "" && strings.TrimSpace(r.Entitlement) == "":
		return "direct"
	case strings.TrimSpace(r.EntitlementType) == "":
		return "other"
	case t == "license":
		return "license"
	case t == "cash" || t == "quantity" || t == "precommitment":
		return "balance"
	}
	return "other"
}

// Totals sums lines per currency and cost centre:
// "USD|News" → total.
func Totals(lines []Line) map[string]tally.Decimal {
	out := map[string]tally.Decimal{}
	for _, l := range lines {
		k := l.Currency + "|" + l.CostCentre
		out[k] = out[k].Add(l.Amount)
	}
	return out
}
