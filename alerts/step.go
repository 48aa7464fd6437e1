package alerts

import (
	"context"
	"errors"
	"os"

	"github.com/google/uuid"

	"github.com/tally-dev/tally/job"
	"github.com/tally-dev/tally/store"
)

func init() { job.Register("alerts", step) }

// step is the alerts step as schedule.jobs[].run names it: every fetch is
// followed by it (the runner's), and a job lists it to check again after
// other steps, or without fetching. An alert not sent after its tries is
// the step's partial result.
func step(ctx context.Context, env *job.Env, runID uuid.UUID) (job.Result, error) {
	_, err := CheckAndSend(ctx, env, runID)
	if errors.As(err, new(*SendError)) {
		return job.Result{}, job.StepErrors(err)
	}
	return job.Result{}, err
}

// CheckAndSend is the alerts step's work, the one path by which alerts go
// out: it evaluates the budgets and anomalies on what the run's store
// holds, records what is new, hands the check to the run's observer
// (/metrics) and sends every pending alert: to the log, and to
// alerts.webhook when set. A send that fails after its tries is a
// *SendError, the alerts staying pending for the next run. Nothing is
// checked when the config has neither budgets, commitments nor a webhook,
// so a config without them costs no query.
func CheckAndSend(ctx context.Context, env *job.Env, runID uuid.UUID) (Check, error) {
	cfg := env.Config
	if len(cfg.Budgets) == 0 && len(cfg.Commitments) == 0 && cfg.Alerts.Webhook == nil {
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

// TuneWebhook, when set, adjusts the webhook before use: tests of the
// packages that run the step shorten its pauses.
var TuneWebhook func(*Webhook)

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
