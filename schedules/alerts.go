package schedules

import (
	"context"
	"errors"

	"github.com/google/uuid"

	"github.com/tally-dev/tally/alerts"
)

func init() { RegisterStep("alerts", alertsStep) }

// alertsStep is the alerts step (alerts.CheckAndSend): every fetch is
// followed by it (fetchThenAlerts); a job lists it to check again after
// other steps, or without fetching.
func alertsStep(ctx context.Context, env *Env, runID uuid.UUID) (StepResult, error) {
	_, err := CheckAlerts(ctx, env, runID)
	if err != nil {
		if errors.As(err, new(*alerts.SendError)) {
			return StepResult{}, &PartialError{Other: []error{err}}
		}
	}
	return StepResult{}, err
}

// CheckAlerts runs the alerts step on the run's store (alerts.CheckAndSend),
// its check's figures going to Env.OnAlerts.
func CheckAlerts(ctx context.Context, env *Env, runID uuid.UUID) (alerts.Check, error) {
	return alerts.CheckAndSend(ctx, alerts.Env{Store: env.Store, Config: env.Config, Log: env.Log, RunID: runID,
		Today: env.today(), AsOf: env.AsOf, Version: env.Version, OnCheck: env.OnAlerts, TuneWebhook: webhookTune})
}

// webhookTune, when set, adjusts the webhook before use: tests shorten its
// pauses and trust their server.
var webhookTune func(*alerts.Webhook)

// fetchThenAlerts is a fetch followed by the alerts step, as every fetch
// is (a budget crossed or a day that jumped is news the morning it is
// fetched): after a fetch that loaded what it could, whole or in part. An
// alert not sent after its tries makes the fetch partial; a check that
// failed fails it.
func fetchThenAlerts(ctx context.Context, env *Env, runID uuid.UUID, opts FetchOptions) (FetchSummary, error) {
	sum, err := Fetch(ctx, env, runID, opts)
	if err != nil && !isPartial(err) {
		return sum, err
	}
	check, alertErr := CheckAlerts(ctx, env, runID)
	sum.Alerts = check
	switch {
	case alertErr == nil:
		return sum, err
	case !errors.As(alertErr, new(*alerts.SendError)):
		return sum, alertErr
	case err == nil:
		return sum, &PartialError{Other: []error{alertErr}}
	}
	pe := err.(*PartialError)
	pe.Other = append(pe.Other, alertErr)
	return sum, pe
}

// AlertsSummary is what `tally alerts` found.
type AlertsSummary struct {
	Check alerts.Check
	// ToSend are the alerts a dry run would send now: those still pending
	// from earlier runs and the new ones that are news.
	ToSend []alerts.Alert
	// Published is the analysts' copy, after a run that sent.
	Published string
}

// Alerts is `tally alerts`: the budget and anomaly check a fetch ends
// with, on what is already loaded. With dryRun it reads the analysts' copy
// and lists what would be sent, writing and sending nothing.
func (r *Runner) Alerts(ctx context.Context, dryRun bool) (AlertsSummary, error) {
	var sum AlertsSummary
	if dryRun {
		st, err := OpenPublished(ctx, r.Config, r.Log, false)
		if err != nil {
			return sum, err
		}
		defer st.Close()
		if sum.Check, err = alerts.Evaluate(ctx, st, r.Config, uuid.Nil, r.today(), r.AsOf, false); err != nil {
			return sum, err
		}
		sum.ToSend, err = alerts.ToSend(ctx, st, sum.Check)
		return sum, err
	}
	published, err := r.withRun(ctx, "alerts", "", func(ctx context.Context, env *Env, runID uuid.UUID) (runStats, error) {
		var err error
		sum.Check, err = CheckAlerts(ctx, env, runID)
		if errors.As(err, new(*alerts.SendError)) {
			err = &PartialError{Other: []error{err}}
		}
		return runStats{}, err
	})
	sum.Published = published
	return sum, err
}
