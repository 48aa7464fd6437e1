package alerts

import (
	"context"
	"os"

	"github.com/google/uuid"

	"github.com/tally-dev/tally/job"
)

// CheckAndSend evaluates the budgets and anomalies on what the run's store
// holds, records what is new and sends every pending alert: to the log,
// and to alerts.webhook when set. A send that fails after its tries is a
// *SendError, the alerts staying pending for the next run. Nothing is
// checked when the config has neither budgets nor a webhook, so a config
// without them costs no query. Every fetch ends with it, as the alerts
// step is it.
func CheckAndSend(ctx context.Context, env *job.Env, runID uuid.UUID) (Check, error) {
	cfg := env.Config
	if len(cfg.Budgets) == 0 && cfg.Alerts.Webhook == nil {
		return Check{}, nil
	}
	check, err := Evaluate(ctx, env.Store, cfg, runID, env.Today(), env.AsOf, true)
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
	var hook *Webhook
	if w := cfg.Alerts.Webhook; w != nil {
		sec, err := w.Secret(os.Getenv)
		if err != nil {
			return check, err
		}
		if hook, err = NewWebhook(w, sec, env.Version); err != nil {
			return check, err
		}
		if TuneWebhook != nil {
			TuneWebhook(hook)
		}
	}
	_, err = SendPending(ctx, env.Store, env.Log, hook)
	return check, err
}

// TuneWebhook, when set, adjusts the webhook before use: tests (of every
// package whose runs send alerts) shorten its pauses and trust their
// server. Never set outside tests.
var TuneWebhook func(*Webhook)
