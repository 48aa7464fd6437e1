package alerts

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/tally-dev/tally"
	"github.com/tally-dev/tally/configs"
	"github.com/tally-dev/tally/store"
)

// commitmentAlerts are the config's commitments in force this month that
// are drawn faster than they last: at the month's pace they run out
// before their end, or are used up already; measured as the workbook's
// Commitments sheet measures them (store.CommitmentDraws), at the config's
// basis and granularity, on the store as it stood on asOf's morning (zero:
// now). Each is one alert per commitment (its entitlement and start),
// found once: a later month at the same pace says so on the workbook's
// Flags, not in a second alert.
func commitmentAlerts(ctx context.Context, st *store.Store, cfg *configs.Config, runID uuid.UUID, now, asOf time.Time) ([]Alert, error) {
	if len(cfg.Commitments) == 0 {
		return nil, nil
	}
	month := time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, time.UTC)
	conn, release, err := st.AsOfConn(ctx, asOf)
	if err != nil {
		return nil, fmt.Errorf("read commitments: %w", err)
	}
	defer release()
	draws, err := store.CommitmentDraws(ctx, conn, store.CommitmentWindow{Basis: cfg.DefaultBasis(), Granularity: cfg.Usage.Granularity, Month: month},
		cfg.CommitmentTerms())
	if err != nil {
		return nil, err
	}
	var out []Alert
	for _, d := range draws {
		if d.Early && d.InForce(month, month.AddDate(0, 1, 0)) {
			out = append(out, commitmentAlert(d, month, runID, now))
		}
	}
	return out, nil
}

func commitmentAlert(d store.CommitmentDraw, month time.Time, runID uuid.UUID, now time.Time) Alert {
	c := d.Terms
	figure := func(v tally.Decimal) string { return v.String() }
	kind := "usage"
	if c.Category == tally.CommitmentCategorySpend {
		figure, kind = cents, "spend"
	}
	period := c.Start.Format(tally.DateLayout) + " to " + c.End.Format(tally.DateLayout)
	m := month.Format("2006-01")
	head := fmt.Sprintf("Tally: commitment %q (entitlement %s, %s %s, %s)", c.Label(), c.Entitlement, figure(c.Size), c.Of(), period)
	var text, runsOut string
	if d.UsedUp {
		text = fmt.Sprintf("%s is used up before its end: %s %s drawn to date, %s in %s.", head, figure(d.ToDate), c.Of(), figure(d.Month), m)
	} else {
		runsOut = d.RunsOut.Format(tally.DateLayout)
		text = fmt.Sprintf("%s runs out on %s at %s's pace, before its end: %s %s drawn to date, %s in %s through %s.",
			head, runsOut, m, figure(d.ToDate), c.Of(), figure(d.Month), m, d.PaceUntil.AddDate(0, 0, -1).Format(tally.DateLayout))
	}
	body := map[string]any{
		"kind": "commitment", "text": text, "commitment": c.Name, "entitlement": c.Entitlement, "type": kind,
		"month": m, "scope": "entitlement:" + c.Entitlement, "start": c.Start.Format(tally.DateLayout), "end": c.End.Format(tally.DateLayout),
		"committed": figure(c.Size), "drawn_month": figure(d.Month), "drawn_to_date": figure(d.ToDate), "remaining": figure(d.Remaining()),
		"runs_out": runsOut, "used_up": d.UsedUp,
	}
	if kind == "spend" {
		body["currency"] = c.Currency
	} else {
		body["unit"] = c.Unit
	}
	if d.PaceUntil.After(d.PaceFrom) {
		body["pace_from"], body["pace_through"] = d.PaceFrom.Format(tally.DateLayout), d.PaceUntil.AddDate(0, 0, -1).Format(tally.DateLayout)
	}
	return Alert{
		Key:  "commitment:" + c.Entitlement + ":" + c.Start.Format(tally.DateLayout),
		Kind: "commitment", FoundAt: now, RunID: runID, Month: month, Scope: "entitlement:" + c.Entitlement, Currency: c.Currency,
		Text: text, Payload: payload(body), Status: StatusPending,
	}
}
