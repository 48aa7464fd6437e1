package alerts

import (
	"context"
	"encoding/json"
	"fmt"
	"math/big"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/tally-dev/tally"
	"github.com/tally-dev/tally/configs"
	"github.com/tally-dev/tally/store"
)

// StaleAfter is how long after its day an anomaly is still news: one
// found later (a first backfill of old months) is recorded, not sent.
const StaleAfter = 7 * 24 * time.Hour

// anomalyLookback is how far back each check looks for anomalies: past
// StaleAfter, so a day whose usage arrived late is still judged.
const anomalyLookback = 35 * 24 * time.Hour

// BudgetStatus is one budget's standing in the current month.
type BudgetStatus struct {
	Budget configs.Budget
	Month  time.Time
	AsOf   time.Time
	// Through is how far the data reaches (the last day holding usage,
	// complete or not), as the "through" labels say it.
	Through tally.DataThrough
	// Found is false when the scope has no usage in the budget's currency
	// this month: its figures are zero.
	Found            bool
	Actual, Forecast tally.Decimal
}

// ActualRatio and ForecastRatio are the figures as fractions of the
// budget amount (1 = 100%).
func (b BudgetStatus) ActualRatio() float64   { return ratio(b.Actual, b.Budget.Amount) }
func (b BudgetStatus) ForecastRatio() float64 { return ratio(b.Forecast, b.Budget.Amount) }

func ratio(x, of tally.Decimal) float64 {
	f, _ := new(big.Rat).Quo(x.Rat(), of.Rat()).Float64()
	return f
}

// Check is what one evaluation found.
type Check struct {
	Budgets []BudgetStatus
	// New are the alerts this check found that no earlier one had, in the
	// order found; with record, they are in the alerts table.
	New []Alert
	// Anomalies counts the new anomaly alerts among New.
	Anomalies int
	// Freshness is how recent each organization's usage is (see
	// Staleness); a stale one is one alert per episode among New.
	Freshness []Freshness
}

// BudgetRatios are each budget's actual and forecast cost as fractions of
// its amount (1 = 100%), by budget name: the figures of the check the
// runner's /metrics shows, which it takes through this method so that it
// imports no alerts.
func (c Check) BudgetRatios() map[string][2]float64 {
	out := map[string][2]float64{}
	for _, b := range c.Budgets {
		out[b.Budget.Name] = [2]float64{b.ActualRatio(), b.ForecastRatio()}
	}
	return out
}

// NewAnomalies counts the new anomaly alerts the check found, for the
// runner's /metrics.
func (c Check) NewAnomalies() int { return c.Anomalies }

// Evaluate checks every budget against the current month's forecasts,
// every commitment against the current month's pace (one alert per
// commitment drawn faster than it lasts), judges how recent the usage is
// (one alert per stale episode) and
// looks for anomalies, as the store's views compute them with cfg's
// thresholds. With record, new alerts are added to the alerts table
// (pending, or stale for an anomaly too old to be news); without, nothing
// is written (a dry run). A replay's asOf (--as-of; zero for none) is
// the day now stands for, and the budgets are checked against the
// forecasts as they stood on its morning (store.AsOfConn), not against
// the days loaded since.
func Evaluate(ctx context.Context, st *store.Store, cfg *configs.Config, runID uuid.UUID, now, asOf time.Time, record bool) (Check, error) {
	var c Check
	now = now.UTC()
	if record {
		if err := SaveSettings(ctx, st, cfg.Anomalies.MADs, cfg.Anomalies.MinAmount, cfg.Anomalies.MinPercent); err != nil {
			return c, err
		}
	}
	forecasts, err := st.CurrentForecasts(ctx, asOf)
	if err != nil {
		return c, err
	}
	var found []Alert
	for _, b := range cfg.Budgets {
		s := BudgetStatus{Budget: b, Actual: tally.MustDecimal("0"), Forecast: tally.MustDecimal("0")}
		for _, f := range forecasts {
			s.Month, s.AsOf, s.Through = f.Month, f.AsOf, f.Through
			if f.ScopeKind == b.ScopeKind && f.Scope == b.Scope && f.Currency == b.Currency {
				s.Found, s.Actual, s.Forecast = true, f.Actual, f.Forecast
			}
		}
		c.Budgets = append(c.Budgets, s)
		if s.Month.IsZero() {
			continue // no usage at hour or day granularity at all
		}
		add := func(a Alert) {
			if b.ScopeKind == "organization" {
				a.Organization = b.Scope
			}
			found = append(found, a)
		}
		for _, pct := range b.Actual {
			if crossed(s.Actual, b.Amount, pct) {
				add(budgetAlert(s, "actual", pct, runID, now))
			}
		}
		for _, pct := range b.Forecast {
			if crossed(s.Forecast, b.Amount, pct) {
				add(budgetAlert(s, "forecast", pct, runID, now))
			}
		}
	}
	commitments, err := commitmentAlerts(ctx, st, cfg, runID, now, asOf)
	if err != nil {
		return c, err
	}
	found = append(found, commitments...)
	anomalies, err := st.Anomalies(ctx, now.Add(-anomalyLookback).Truncate(24*time.Hour))
	if err != nil {
		return c, err
	}
	for _, a := range anomalies {
		org := ""
		if cfg.Grouped() {
			// In a group a project is named within its organization.
			org, a.Project = a.Organization, a.Organization+"/"+a.Project
		}
		al := anomalyAlert(a, runID, now)
		al.Organization = org
		found = append(found, al)
	}
	if c.Freshness, err = Staleness(ctx, st, cfg, now); err != nil {
		return c, err
	}
	for _, f := range c.Freshness {
		if f.Stale {
			a := staleAlert(f, cfg.Usage.StaleAfter, runID, now)
			if !cfg.Grouped() {
				a.Organization = ""
			}
			found = append(found, a)
		}
	}
	for _, a := range found {
		var isNew bool
		if record {
			isNew, err = Record(ctx, st, a)
		} else {
			var known bool
			known, err = Known(ctx, st, a.Key)
			isNew = !known
		}
		if err != nil {
			return c, err
		}
		if isNew {
			c.New = append(c.New, a)
			if a.Kind == "anomaly" {
				c.Anomalies++
			}
		}
	}
	return c, nil
}

// crossed reports whether x reaches pct percent of amount, exactly.
func crossed(x, amount tally.Decimal, pct int) bool {
	limit := new(big.Rat).Mul(amount.Rat(), big.NewRat(int64(pct), 100))
	return x.Rat().Cmp(limit) >= 0
}

// cents formats an exact amount with two decimals, rounding half away
// from zero, as the alerts show money.
func cents(d tally.Decimal) string {
	r := new(big.Rat).Mul(d.Rat(), big.NewRat(100, 1))
	n, rem := new(big.Int).QuoRem(r.Num(), r.Denom(), new(big.Int))
	if new(big.Int).Mul(new(big.Int).Abs(rem), big.NewInt(2)).Cmp(r.Denom()) >= 0 {
		n.Add(n, big.NewInt(int64(r.Sign())))
	}
	return tally.NewDecimal(n, 2).String()
}

func budgetAlert(s BudgetStatus, kind string, pct int, runID uuid.UUID, now time.Time) Alert {
	b := s.Budget
	month := s.Month.Format("2006-01")
	amount := cents(b.Amount)
	var text string
	figure := s.Actual
	// The actual figure runs through the last day holding usage: the
	// text says which, and whether it is complete or still partial, as
	// the workbook's Budgets sheet does.
	through := s.Through.Label()
	if kind == "actual" {
		text = fmt.Sprintf("Tally: budget %q (%s, %s) reached %d%% of %s %s in %s: %s %s so far, through %s.",
			b.Name, b.ScopeText(), b.Currency, pct, amount, b.Currency, month, cents(s.Actual), b.Currency, through)
	} else {
		figure = s.Forecast
		text = fmt.Sprintf("Tally: budget %q (%s, %s) is forecast to reach %d%% of %s %s in %s: %s %s by month end; %s so far, through %s.",
			b.Name, b.ScopeText(), b.Currency, pct, amount, b.Currency, month, cents(s.Forecast), b.Currency, cents(s.Actual), through)
	}
	body := map[string]any{
		"kind": "budget", "text": text, "budget": b.Name, "threshold": fmt.Sprintf("%s %d%%", kind, pct),
		"month": month, "scope": b.ScopeText(), "currency": b.Currency, "amount": amount,
		"actual": cents(s.Actual), "forecast": cents(s.Forecast), "as_of": s.AsOf.Format(tally.DateLayout),
		"through": s.Through.LastUsageDay.Format(tally.DateLayout), "through_complete": s.Through.Complete(),
		"percent": fmt.Sprintf("%.1f", ratio(figure, b.Amount)*100),
	}
	return Alert{
		Key:  fmt.Sprintf("budget:%s:%s:%d:%s", b.Name, kind, pct, month),
		Kind: "budget", FoundAt: now, RunID: runID, Month: s.Month, Scope: b.ScopeText(), Currency: b.Currency,
		Text: text, Payload: payload(body), Status: StatusPending,
	}
}

func anomalyAlert(a store.Anomaly, runID uuid.UUID, now time.Time) Alert {
	project := a.Project
	if project == "" {
		project = "usage without a project"
	}
	day := a.Day.Format(tally.DateLayout)
	how := "the 28 days before never varied"
	score := ""
	if a.Score != nil {
		score = fmt.Sprintf("%.1f", *a.Score)
		how = score + " scaled MADs above the median of the 28 days before"
	}
	text := fmt.Sprintf("Tally: %s's %s cost %s %s on %s, %s more than its usual %s %s (%s).",
		project, a.Meter, cents(a.Cost), a.Currency, day, cents(a.Excess), cents(a.Baseline), a.Currency, how)
	body := map[string]any{
		"kind": "anomaly", "text": text, "day": day, "month": a.Day.Format("2006-01"),
		"scope": "project:" + a.Project, "project": a.Project, "meter": a.Meter, "currency": a.Currency,
		"cost": cents(a.Cost), "baseline": cents(a.Baseline), "excess": cents(a.Excess), "score": score,
	}
	status := StatusPending
	if now.Sub(a.Day) > StaleAfter {
		status = StatusStale
	}
	return Alert{
		Key:  strings.Join([]string{"anomaly", a.Project, a.Meter, a.Currency, day}, ":"),
		Kind: "anomaly", FoundAt: now, RunID: runID, Month: time.Date(a.Day.Year(), a.Day.Month(), 1, 0, 0, 0, 0, time.UTC),
		Scope: "project:" + a.Project, Currency: a.Currency, Text: text, Payload: payload(body), Status: status,
	}
}

// payload is the JSON body of an alert: its fields sorted by name, so
// the same alert is the same bytes (and signature) on every try.
func payload(body map[string]any) string {
	b, err := json.Marshal(body)
	if err != nil {
		panic(err) // strings only: cannot fail
	}
	return string(b)
}
