package reports

import (
	"database/sql"
	"fmt"

	"github.com/tally-dev/tally"
	"github.com/tally-dev/tally/store"
)

const sheetCommitments = "Commitments"

// Commitments sheet columns (0-based), for its totals: the currency or
// unit, then committed, drawn this month, drawn to date and remaining.
const (
	cmOfCol        = 3
	cmCommittedCol = 4
)

// commitments fills the Commitments sheet: per commitment of the config
// (Options.Commitments), what was committed, what the usage drew this
// month and to date (store.CommitmentDraws, the rule FOCUS 1.3's Contract
// Commitment sums by), what remains, and the day it runs out at the
// month's pace or that it lasts past its end. One drawn faster than it
// lasts is an item of Flags (commitmentFlags). Spend commitments total per
// currency; usage ones, in units of their own, do not.
func (b *builder) commitments() error {
	draws, err := store.CommitmentDraws(b.ctx, b.src, store.CommitmentWindow{
		Basis: b.p.Basis, Granularity: b.p.Granularity, Org: b.p.Organization, Month: b.p.Month,
	}, b.opts.Commitments)
	if err != nil {
		return err
	}
	cols := []column{
		// What a page holds (about 154 characters): the commitment, its
		// figures and the day it runs out. The entitlement (in the name of
		// one without a name) and how it is measured follow, on screen.
		{"Commitment", 24},
		{"Type", 8},
		{"Period", 24},
		{"Currency or unit", 12},
		{"Committed", 16},
		{"Drawn this month", 16},
		{"Drawn to date", 16},
		{"Remaining", 16},
		{"Runs out at the month's pace", 18},
		{"Entitlement", 16},
		{"How it is measured", 50},
	}
	t, err := b.newTable(sheetCommitments, "Commitments", 1, cols)
	if err != nil {
		return err
	}
	totals := b.newFoot(len(cols))
	for _, d := range draws {
		c := d.Terms
		kind := "usage"
		if c.Category == tally.CommitmentCategorySpend {
			kind = "spend"
		}
		figures := []tally.Decimal{c.Size, d.Month, d.ToDate, d.Remaining()}
		cells := make([]cell, len(figures))
		for i, v := range figures {
			if c.Category == tally.CommitmentCategorySpend {
				if cells[i], err = b.amount(money{dec: v, valid: true}, c.Currency); err != nil {
					return err
				}
				continue
			}
			cells[i] = cell{v.Float64(), b.st.quantity}
		}
		if c.Category == tally.CommitmentCategorySpend {
			l := b.currencyLine(totals, c.Currency, cmOfCol)
			for i, v := range figures {
				l.amount(cmCommittedCol+i, c.Currency, money{dec: v, valid: true})
			}
		}
		row := append([]cell{b.wrapped(c.Label()), b.txt(kind),
			b.txt(c.Start.Format(tally.DateLayout) + " to " + c.End.Format(tally.DateLayout)), b.txt(c.Of())},
			cells...)
		row = append(row, b.runsOut(d), b.txt(c.Entitlement), b.wrapped(b.commitmentBasis(d)))
		if err := t.add(row...); err != nil {
			return err
		}
		if d.Early && d.InForce(b.p.Month, b.p.end()) {
			b.commitmentFlags = append(b.commitmentFlags, b.commitmentFlag(d))
		}
	}
	if err := t.finish(""); err != nil {
		return err
	}
	_, err = totals.write(t)
	return err
}

// runsOut is the Runs out cell: the day, or why there is none.
func (b *builder) runsOut(d store.CommitmentDraw) cell {
	c := d.Terms
	switch {
	case c.Start.After(b.p.end().AddDate(0, 0, -1)):
		return b.txt("starts " + c.Start.Format(tally.DateLayout))
	case d.UsedUp:
		return b.txt("used up")
	case c.End.Before(b.p.Month):
		return b.txt("ended " + c.End.Format(tally.DateLayout))
	case !d.RunsOut.IsZero():
		return b.day(sql.NullTime{Time: d.RunsOut, Valid: true})
	}
	return b.txt("lasts past its end")
}

// commitmentBasis says how a commitment's row was measured: the pace's
// days, and the rows of its entitlement left out.
func (b *builder) commitmentBasis(d store.CommitmentDraw) string {
	c := d.Terms
	days := int(d.PaceUntil.Sub(d.PaceFrom).Hours() / 24)
	what := "quantity"
	if c.Category == tally.CommitmentCategorySpend {
		what = "cost"
	}
	s := fmt.Sprintf("Drawn: the %s of the entitlement's rows in %s (basis %s, granularity %s), from %s.",
		what, c.Of(), b.p.Basis, b.p.Granularity, c.Start.Format(tally.DateLayout))
	if days > 0 {
		s += fmt.Sprintf(" Pace: %s over %d days, %s to %s (the month's last day holding usage).",
			b.figure(d.Month, c), days, d.PaceFrom.Format(tally.DateLayout), d.PaceUntil.AddDate(0, 0, -1).Format(tally.DateLayout))
	} else {
		s += " No pace: no day of the month within its period holds usage."
	}
	if d.RowsApart > 0 {
		s += fmt.Sprintf(" %d rows of the entitlement in its period are not counted: another currency or unit, or an entitlement type of the other kind or unknown.", d.RowsApart)
	}
	return s
}

// figure is an amount of c as text quotes it: money to its currency's
// minor unit, a quantity as it is.
func (b *builder) figure(v tally.Decimal, c tally.CommitmentTerms) string {
	if c.Category == tally.CommitmentCategorySpend {
		return money{dec: v, valid: true}.round(minorUnit(c.Currency)) + " " + c.Currency
	}
	return v.String() + " " + c.Unit
}

// commitmentFlag is the Flags item of a commitment drawn faster than it
// lasts: at the month's pace it runs out before its end, or is used up.
func (b *builder) commitmentFlag(d store.CommitmentDraw) flagRow {
	c := d.Terms
	f := flagRow{
		kind:    flagCommitmentRunsOut,
		subject: sql.NullString{String: c.Label(), Valid: true},
		name:    sql.NullString{String: "entitlement " + c.Entitlement, Valid: true},
		first:   sql.NullTime{Time: d.PaceFrom, Valid: d.PaceUntil.After(d.PaceFrom)},
		last:    sql.NullTime{Time: d.PaceUntil.AddDate(0, 0, -1), Valid: d.PaceUntil.After(d.PaceFrom)},
	}
	if c.Category == tally.CommitmentCategorySpend {
		f.currency = c.Currency
		f.cost = money{dec: d.Remaining(), valid: true}
	}
	committed := fmt.Sprintf("Committed %s from %s to %s; %s drawn to date, %s this month.",
		b.figure(c.Size, c), c.Start.Format(tally.DateLayout), c.End.Format(tally.DateLayout), b.figure(d.ToDate, c), b.figure(d.Month, c))
	if d.UsedUp {
		f.detail = committed + " It is used up before its end."
	} else {
		f.detail = committed + fmt.Sprintf(" At the month's pace it runs out on %s, before its end.", d.RunsOut.Format(tally.DateLayout))
	}
	return f
}
