package tally

import (
	"math/big"
	"time"
)

// Commitment categories, as FOCUS names them and the SQL macro
// commitment_category gives a usage row's.
const (
	CommitmentCategorySpend = "Spend" // an amount of money, drawn by cost
	CommitmentCategoryUsage = "Usage" // a quantity of units, drawn by quantity
)

// CommitmentTerms are what was bought under an entitlement, as the
// config's commitments state it (configs.Commitment.Terms): the size the
// workbook's Commitments sheet and the commitment alert measure what the
// usage drew against.
type CommitmentTerms struct {
	Entitlement string
	Name        string // "" when the config gives none
	Path        string // where the config names it: commitments[0]
	Category    string // CommitmentCategorySpend or CommitmentCategoryUsage
	// Size is the amount (Spend, in Currency) or quantity (Usage, in
	// Unit) bought; Currency is "" on a usage commitment, Unit on a spend.
	Size     Decimal
	Currency string
	Unit     string
	// Start and End are its first and last day (inclusive), midnight UTC.
	Start, End time.Time
}

// Label is the commitment as people read it: its name, else its
// entitlement.
func (t CommitmentTerms) Label() string {
	if t.Name != "" {
		return t.Name
	}
	return "entitlement " + t.Entitlement
}

// Of is what its size is in: the currency, or the unit.
func (t CommitmentTerms) Of() string {
	if t.Category == CommitmentCategorySpend {
		return t.Currency
	}
	return t.Unit
}

// RunOut is the day t runs out at the pace of paceDrawn over the days
// [paceFrom, paceUntil), with toDate drawn from its start through the last
// of those days: the first day on which what is drawn, continued at that
// daily pace, reaches its size. used is true when toDate already reaches
// it (day is then zero: when it happened is not told by a pace). before
// is true when it runs out (or ran out) on or before its last day, End:
// drawn faster than it lasts. Without a pace (nothing drawn, no days) it
// lasts past its end. Exact: the pace is a rational, never a float.
func (t CommitmentTerms) RunOut(toDate, paceDrawn Decimal, paceFrom, paceUntil time.Time) (day time.Time, used, before bool) {
	remaining := new(big.Rat).Sub(t.Size.Rat(), toDate.Rat())
	if remaining.Sign() <= 0 {
		return time.Time{}, true, true
	}
	days := int64(paceUntil.Sub(paceFrom).Hours() / 24)
	if days <= 0 || paceDrawn.Sign() <= 0 {
		return time.Time{}, false, false
	}
	// remaining ÷ (paceDrawn ÷ days), rounded up: the day it is reached.
	n := new(big.Rat).Quo(new(big.Rat).Mul(remaining, big.NewRat(days, 1)), paceDrawn.Rat())
	q, r := new(big.Int).QuoRem(n.Num(), n.Denom(), new(big.Int))
	if r.Sign() != 0 {
		q.Add(q, big.NewInt(1))
	}
	if !q.IsInt64() || q.Int64() > 1<<20 { // past any end a config can hold
		return time.Time{}, false, false
	}
	day = paceUntil.AddDate(0, 0, int(q.Int64())-1)
	if day.After(t.End) {
		return time.Time{}, false, false
	}
	return day, false, true
}

// Remaining is t's size less toDate, exactly: negative when drawn past it.
func (t CommitmentTerms) Remaining(toDate Decimal) Decimal {
	scale := max(t.Size.Scale(), toDate.Scale())
	a, _ := t.Size.Scaled(scale) // no error: scale holds both
	b, _ := toDate.Scaled(scale)
	return NewDecimal(a.Sub(a, b), scale)
}
