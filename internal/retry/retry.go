// Package retry owns the one small loop the side channels share (mail and
// folder delivery, alert webhooks): try up to n times, pausing between
// tries for a pause that doubles, stopping early on a final error or when
// the context ends. The interface client has its own, richer policy
// (fetch.RetryPolicy: Retry-After, jitter, a time budget).
package retry

import (
	"context"
	"time"
)

// Do calls try until it succeeds, says the error is final (again false),
// or has been called tries times (at least once), pausing pause before the
// second call and twice as long before each later one. It returns the last
// error, or the context's when it ends during a pause.
func Do(ctx context.Context, tries int, pause time.Duration, try func() (again bool, err error)) error {
	var err error
	for n := 1; ; n++ {
		var again bool
		if again, err = try(); err == nil || !again || n >= tries {
			return err
		}
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		pause *= 2
	}
}
