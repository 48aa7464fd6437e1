package alerts

import (
	"context"
	"os"
	"time"

	"github.com/google/uuid"
	"github.com/rs/zerolog"

	"github.com/tally-dev/tally/configs"
	"github.com/tally-dev/tally/store"
)

// Env is what one alert check runs with: the run's store, config, log and
// id, and its day.
type Env struct {
	Store  *store.Store
	Config *configs.Config
	Log    zerolog.Logger
	RunID  uuid.UUID
	// Today is the day every date decision counts from; AsOf a replay's
	// day (--as-of; zero for none).
	Today, AsOf time.Time
	// Version is the build's, for the User-Agent of webhook posts.
	Version string
	// OnCheck, when set (tally schedule), receives the check's figures for
	// /metrics.
	OnCheck func(Check)
	// TuneWebhook, when set, adjusts the webhook before use: tests shorten
	// its pauses and trust their server.
	TuneWebhook func(*Webhook)
}

// CheckAndSend is the alerts step, the one path by which alerts go out:
// it evaluates the budgets and anomalies on what the store holds, records
// what is new and sends every pending alert: to the log, and to
// alerts.webhook when set. A send that fails after its tries is a
// *SendError, the alerts staying pending for the next run. Nothing is
// checked when the config has neither budgets nor a webhook, so a config
// without them costs no query.
func CheckAndSend(ctx context.Context, env Env) (Check, error) {
	cfg := env.Config
	if len(cfg.Budgets) == 0 && cfg.Alerts.Webhook == nil {
		return Check{}, nil
	}
	check, err := Evaluate(ctx, env.Store, cfg, env.RunID, env.Today, env.AsOf, true)
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
	if env.OnCheck != nil {
		env.OnCheck(check)
	}
	var hook *Webhook
	if w := cfg.Alerts.Webhook; w != nil {
		if hook, err = NewWebhook(w, os.Getenv, env.Version); err != nil {
			return check, err
		}
		if env.TuneWebhook != nil {
			env.TuneWebhook(hook)
		}
	}
	_, err = SendPending(ctx, env.Store, env.Log, hook)
	return check, err
}

// ToSend are the alerts a dry run of check would send now: those still
// pending from earlier runs and the new ones that are news.
func ToSend(ctx context.Context, st *store.Store, check Check) ([]Alert, error) {
	out, err := Pending(ctx, st)
	if err != nil {
		return nil, err
	}
	for _, a := range check.New {
		if a.Status == StatusPending {
			out = append(out, a)
		}
	}
	return out, nil
}
