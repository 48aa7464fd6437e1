package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io/fs"
	"time"

	"github.com/tally-dev/tally"
	tallysql "github.com/tally-dev/tally/sql"
)

// CommitmentDraw is what the usage drew from one commitment in a month
// and to date, and when it runs out at the month's pace: a row of the
// workbook's Commitments sheet, and what the commitment alert judges.
type CommitmentDraw struct {
	Terms tally.CommitmentTerms
	// Month is what the month's rows drew (those on or after its start and
	// through its end); ToDate what every row from its start through the
	// month's end drew, as loaded. Both are 0 when none did.
	Month, ToDate tally.Decimal
	// RowsApart counts the entitlement's rows in its period that draw on
	// no commitment of its kind (another currency or unit, the other
	// category, an unknown type): not in the figures.
	RowsApart int64
	// PaceFrom and PaceUntil are the days the month's pace is taken over:
	// the month's days within the commitment, through the end of the
	// month's last bucket holding usage (PaceUntil exclusive; equal when
	// none).
	PaceFrom, PaceUntil time.Time
	// RunsOut is the day it runs out at that pace, when on or before its
	// end (else zero: it lasts past its end); UsedUp when ToDate reaches
	// its size already; Early when either is so: drawn faster than it
	// lasts.
	RunsOut       time.Time
	UsedUp, Early bool
}

// Remaining is the size less what was drawn to date.
func (d CommitmentDraw) Remaining() tally.Decimal { return d.Terms.Remaining(d.ToDate) }

// InForce reports whether the month [from, until) has a day of the
// commitment.
func (d CommitmentDraw) InForce(from, until time.Time) bool {
	return d.Terms.Start.Before(until) && !d.Terms.End.Before(from)
}

// CommitmentWindow is the month and rows CommitmentDraws reads: the rows
// of a basis and granularity (of organization Org, "" for every one) up
// to the end of the month starting at Month.
type CommitmentWindow struct {
	Basis       tally.Basis
	Granularity tally.Granularity
	Org         string
	Month       time.Time
}

// CommitmentDraws measures each of terms against the usage q holds, by
// sql/reports/commitments.sql (the macros commitment_category and
// commitment_draw, as FOCUS 1.3's Contract Commitment does), in the order
// given. The views it reads are inlined, so it reads an analysts' copy an
// older Tally published as this Tally would.
func CommitmentDraws(ctx context.Context, q Querier, w CommitmentWindow, terms []tally.CommitmentTerms) ([]CommitmentDraw, error) {
	if len(terms) == 0 {
		return nil, nil
	}
	type spec struct {
		I           int    `json:"i"`
		Entitlement string `json:"entitlement"`
		Category    string `json:"category"`
		Currency    string `json:"currency"`
		Unit        string `json:"unit"`
		FirstDay    string `json:"first_day"`
		LastDay     string `json:"last_day"`
	}
	specs := make([]spec, len(terms))
	for i, t := range terms {
		specs[i] = spec{i, t.Entitlement, t.Category, t.Currency, t.Unit, t.Start.Format(tally.DateLayout), t.End.Format(tally.DateLayout)}
	}
	js, err := json.Marshal(specs)
	if err != nil {
		return nil, fmt.Errorf("read commitments: %w", err)
	}
	text, err := fs.ReadFile(tallysql.Reports, "reports/commitments.sql")
	if err != nil {
		return nil, fmt.Errorf("read commitments: %w", err)
	}
	monthUsage, err := fs.ReadFile(tallysql.Reports, "reports/month_usage.sql")
	if err != nil {
		return nil, fmt.Errorf("read commitments: %w", err)
	}
	query, err := tallysql.Inline(tallysql.With(string(text), tallysql.CTE{Name: "month_usage", Query: string(monthUsage)}))
	if err != nil {
		return nil, fmt.Errorf("read commitments: %w", err)
	}
	month := time.Date(w.Month.Year(), w.Month.Month(), 1, 0, 0, 0, 0, time.UTC)
	end := month.AddDate(0, 1, 0)
	var org any
	if w.Org != "" {
		org = w.Org
	}
	rows, err := q.QueryContext(ctx, query,
		sql.Named("basis", string(w.Basis)), sql.Named("granularity", string(w.Granularity)), sql.Named("org", org),
		sql.Named("month_start", month), sql.Named("month_end", end), sql.Named("commitments", string(js)))
	if err != nil {
		return nil, fmt.Errorf("read commitments: %w", err)
	}
	defer rows.Close()
	out := make([]CommitmentDraw, len(terms))
	for rows.Next() {
		var i int
		var drawnMonth, toDate string
		var apart int64
		var last sql.NullTime
		if err := rows.Scan(&i, &drawnMonth, &toDate, &apart, &last); err != nil {
			return nil, fmt.Errorf("read commitments: %w", err)
		}
		if i < 0 || i >= len(terms) {
			return nil, fmt.Errorf("read commitments: row %d of %d", i, len(terms))
		}
		d := CommitmentDraw{Terms: terms[i], RowsApart: apart}
		if d.Month, err = tally.ParseDecimal(drawnMonth); err == nil {
			d.ToDate, err = tally.ParseDecimal(toDate)
		}
		if err != nil {
			return nil, fmt.Errorf("read commitments: %w", err)
		}
		d.PaceFrom, d.PaceUntil = maxTime(month, d.Terms.Start), minTime(end, d.Terms.End.AddDate(0, 0, 1))
		if last.Valid && w.Granularity.Valid() {
			// through the end of the last bucket, to the day: a month's
			// one bucket paces over the month, not its first day
			l := w.Granularity.Next(w.Granularity.Truncate(last.Time))
			if day := time.Date(l.Year(), l.Month(), l.Day(), 0, 0, 0, 0, time.UTC); day.Before(l) {
				l = day.AddDate(0, 0, 1)
			}
			d.PaceUntil = minTime(d.PaceUntil, l)
		} else {
			d.PaceUntil = d.PaceFrom
		}
		if d.PaceUntil.Before(d.PaceFrom) {
			d.PaceUntil = d.PaceFrom
		}
		d.RunsOut, d.UsedUp, d.Early = d.Terms.RunOut(d.ToDate, d.Month, d.PaceFrom, d.PaceUntil)
		out[i] = d
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read commitments: %w", err)
	}
	return out, nil
}
