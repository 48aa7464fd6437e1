package alerts

import (
	"context"
	"errors"
	"fmt"

	"github.com/rs/zerolog"

	"github.com/tally-dev/tally/store"
)

// SendError is a send that failed after its tries: the alerts stay
// pending, for the next run to send.
type SendError struct {
	Sink   string
	Failed int
	Err    error
}

func (e *SendError) Error() string {
	return fmt.Sprintf("%d alert(s) not sent to %s; the next run tries again: %v", e.Failed, e.Sink, e.Err)
}

func (e *SendError) Unwrap() error { return e.Err }

// SendPending sends every pending alert, oldest first: to the log always,
// and to the webhook when there is one (nil: none). An alert the webhook
// took, or that only the log gets, is marked sent and never sent again.
// It returns how many were sent and a *SendError for those that were not.
func SendPending(ctx context.Context, st *store.Store, log zerolog.Logger, hook *Webhook) (int, error) {
	pending, err := Pending(ctx, st)
	if err != nil {
		return 0, err
	}
	sent, failed := 0, 0
	var last error
	for _, a := range pending {
		ev := log.Warn().Str("alert", a.Key).Str("kind", a.Kind).Str("currency", a.Currency)
		var sendErr error
		if hook != nil {
			sendErr = hook.Send(ctx, a.Key, []byte(a.Payload))
			ev = ev.Str("sink", hook.Name())
		}
		if sendErr != nil {
			failed++
			last = sendErr
			ev.Err(sendErr).Msg(a.Text + " (not sent)")
		} else {
			sent++
			ev.Msg(a.Text)
		}
		if err := Mark(ctx, st, a.Key, sendErr); err != nil {
			return sent, err
		}
		if errors.Is(sendErr, context.Canceled) {
			return sent, sendErr
		}
	}
	if failed > 0 {
		return sent, &SendError{Sink: hook.Name(), Failed: failed, Err: last}
	}
	return sent, nil
}
