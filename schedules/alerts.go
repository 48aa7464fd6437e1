package schedules

import (
	"context"
	"errors"

	"github.com/google/uuid"

	"github.com/tally-dev/tally/alerts"
	"github.com/tally-dev/tally/job"
)

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
		st, err := OpenPublished(ctx, r.Config, r.Log)
		if err != nil {
			return sum, err
		}
		defer st.Close()
		if sum.Check, err = alerts.Evaluate(ctx, st, r.Config, uuid.Nil, r.Today(), r.AsOf, false); err != nil {
			return sum, err
		}
		sum.ToSend, err = alerts.ToSend(ctx, st, sum.Check)
		return sum, err
	}
	published, err := r.RecordStep(ctx, "alerts", func(ctx context.Context, env *job.Env, runID uuid.UUID) (job.Result, error) {
		var err error
		sum.Check, err = alerts.CheckAndSend(ctx, env, runID)
		if errors.As(err, new(*alerts.SendError)) {
			err = job.StepErrors(err)
		}
		return job.Result{}, err
	})
	sum.Published = published
	return sum, err
}
