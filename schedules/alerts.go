package schedules

import (
	"context"
	"errors"
	"os"

	"github.com/google/uuid"

	"github.com/tally-dev/tally/alerts"
	"github.com/tally-dev/tally/job"
	"github.com/tally-dev/tally/store"
)

func init() { job.Register("alerts", alertsStep) }

// alertsStep checks budgets and anomalies and sends what is new, as every
// fetch does at its end; a job lists it to check again after other steps,
// or without fetching.
func alertsStep(ctx context.Context, env *job.Env, runID uuid.UUID) (job.Result, error) {
	_, err := CheckAlerts(ctx, env, runID)
	if err != nil {
		if errors.As(err, new(*alerts.SendError)) {
			return job.Result{}, job.StepErrors(err)
		}
	}
	return job.Result{}, err
}

// CheckAlerts evaluates the budgets and anomalies on what the store holds,
// records what is new and sends every pending alert: to the log, and to
// alerts.webhook when set. A send that fails after its tries is an
// *alerts.SendError, the alerts staying pending for the next run. Nothing
// is checked when the config has neither budgets nor a webhook, so a
// config without them costs no query.
func CheckAlerts(ctx context.Context, env *job.Env, runID uuid.UUID) (alerts.Check, error) {
	cfg := env.Config
	if len(cfg.Budgets) == 0 && cfg.Alerts.Webhook == nil {
		return alerts.Check{}, nil
	}
	check, err := alerts.Evaluate(ctx, env.Store, cfg, runID, env.Today(), env.AsOf, true)
	if err != nil {
		return check, err
	}
	for _, b := range check.Budgets {
		ev := env.Log.Info().Str("budget", b.Budget.Name).Str("currency", b.Budget.Currency)
		if !b.Found {
			env.Log.Warn().Str("budget", b.Budget.Name).Str("scope", b.Budget.ScopeText()).Str("currency", b.Budget.Currency).
				Msg("budget has no usage in its scope and currency this month: check its scope and currency (tally status lists what the scope bills in)")
			continue
		}
		ev.Str("actual", b.Actual.String()).Str("forecast", b.Forecast.String()).Str("amount", b.Budget.Amount.String()).
			Float64("actual_ratio", b.ActualRatio()).Float64("forecast_ratio", b.ForecastRatio()).Msg("budget checked")
	}
	env.Emit(check)
	var hook *alerts.Webhook
	if w := cfg.Alerts.Webhook; w != nil {
		sec, err := w.Secret(os.Getenv)
		if err != nil {
			return check, err
		}
		if hook, err = alerts.NewWebhook(w, sec, env.Version); err != nil {
			return check, err
		}
		if webhookTune != nil {
			webhookTune(hook)
		}
	}
	_, err = alerts.SendPending(ctx, env.Store, env.Log, hook)
	return check, err
}

// webhookTune, when set, adjusts the webhook before use: tests shorten its
// pauses and trust their server.
var webhookTune func(*alerts.Webhook)

// AlertsSummary is what `tally alerts` found.
type AlertsSummary struct {
	Check alerts.Check
	// ToSend are the alerts a dry run would send now: those still pending
	// from earlier runs and the new ones that are news.
	ToSend []store.Alert
	// Published is the analysts' copy, after a run that sent.
	Published string
}

// Alerts is `tally alerts`: the budget and anomaly check a fetch ends
// with, on what is already loaded. With dryRun it reads the analysts' copy
// and lists what would be sent, writing and sending nothing.
func (r *Runner) Alerts(ctx context.Context, dryRun bool) (AlertsSummary, error) {
	var sum AlertsSummary
	if dryRun {
		st, err := OpenPublished(ctx, r.Config, r.Log)
		if err != nil {
			return sum, err
		}
		defer st.Close()
		if sum.Check, err = alerts.Evaluate(ctx, st, r.Config, uuid.Nil, r.today(), r.AsOf, false); err != nil {
			return sum, err
		}
		if sum.ToSend, err = st.PendingAlerts(ctx); err != nil {
			return sum, err
		}
		for _, a := range sum.Check.New {
			if a.Status == store.AlertPending {
				sum.ToSend = append(sum.ToSend, a)
			}
		}
		return sum, nil
	}
	published, err := r.withRun(ctx, "alerts", "", func(ctx context.Context, env *job.Env, runID uuid.UUID) (job.Result, error) {
		var err error
		sum.Check, err = CheckAlerts(ctx, env, runID)
		if errors.As(err, new(*alerts.SendError)) {
			err = job.StepErrors(err)
		}
		return job.Result{}, err
	})
	sum.Published = published
	return sum, err
}
