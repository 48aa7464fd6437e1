package fetch

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"syscall"
	"time"

	"github.com/tally-dev/tally"
)

// RetryPolicy bounds the retries of one request (and of one Client.Retry).
type RetryPolicy struct {
	MaxAttempts int           // total attempts per request, >= 1 (config api.max_retries + 1)
	BaseDelay   time.Duration // first backoff; zero means 500ms
	MaxDelay    time.Duration // cap of one backoff, and of a Retry-After; zero means 60s
	MaxElapsed  time.Duration // cap on the total time spent retrying one request; zero means 10m
	// Sleep waits d or until ctx is done, returning ctx.Err() at once on
	// cancel. Nil means a real timer; tests inject one that records.
	Sleep func(ctx context.Context, d time.Duration) error
}

// DefaultRetry is the policy of a client built without WithRetry: nine
// attempts (the config's default max_retries of 8, plus the first).
func DefaultRetry() RetryPolicy {
	return RetryPolicy{
		MaxAttempts: 9,
		BaseDelay:   500 * time.Millisecond,
		MaxDelay:    60 * time.Second,
		MaxElapsed:  10 * time.Minute,
	}
}

// normalize fills zero durations with the defaults and rejects what cannot
// work.
func (p RetryPolicy) normalize() (RetryPolicy, error) {
	d := DefaultRetry()
	if p.MaxAttempts < 1 {
		return p, fmt.Errorf("retry policy: MaxAttempts %d must be at least 1 (1 means no retry)", p.MaxAttempts)
	}
	for _, f := range []struct {
		name string
		v    *time.Duration
		def  time.Duration
	}{{"BaseDelay", &p.BaseDelay, d.BaseDelay}, {"MaxDelay", &p.MaxDelay, d.MaxDelay}, {"MaxElapsed", &p.MaxElapsed, d.MaxElapsed}} {
		switch {
		case *f.v < 0:
			return p, fmt.Errorf("retry policy: %s %s must not be negative (zero means %s)", f.name, *f.v, f.def)
		case *f.v == 0:
			*f.v = f.def
		}
	}
	if p.Sleep == nil {
		p.Sleep = sleepCtx
	}
	return p, nil
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// backoff is the wait before attempt n+1 after n failed attempts:
// exponential, capped at MaxDelay, with full jitter above a floor of half
// the first delay so that a retry never fires at once.
func (p RetryPolicy) backoff(n int) time.Duration {
	ceil := p.BaseDelay
	for i := 1; i < n && ceil < p.MaxDelay; i++ {
		ceil *= 2
	}
	ceil = min(ceil, p.MaxDelay)
	floor := min(p.BaseDelay, ceil) / 2
	if ceil <= floor {
		return ceil
	}
	return floor + rand.N(ceil-floor+1)
}

// delay is the wait after the n-th failed attempt: the server's Retry-After
// when it gave a positive one (capped at MaxDelay), otherwise the backoff.
func (p RetryPolicy) delay(n int, err error) time.Duration {
	var ae *APIError
	if errors.As(err, &ae) && ae.RetryAfter > 0 {
		return min(ae.RetryAfter, p.MaxDelay)
	}
	return p.backoff(n)
}

// Retry runs fn again while it returns an error for which Retryable is true,
// with the client's backoff (honouring a Retry-After carried by the error),
// until the policy's caps. The caller uses it to restart a whole window
// whose stream was cut after rows were consumed.
//
// An error that already outlived the client's own retries of one request is
// returned as is: its budget is spent, and starting it over would multiply
// the attempts.
func (c *Client) Retry(ctx context.Context, fn func(ctx context.Context) error) error {
	return c.withRetry(ctx, nil, "retry", func(ctx context.Context, _ int) error { return fn(ctx) })
}

// withRetry is the retry loop shared by every request and by Retry. fn gets
// the attempt number, from 1.
func (c *Client) withRetry(ctx context.Context, stats *tally.Stats, what string, fn func(ctx context.Context, attempt int) error) error {
	p := c.retry
	start := time.Now()
	var waited time.Duration
	for attempt := 1; ; attempt++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		err := fn(ctx, attempt)
		if err == nil {
			return nil
		}
		if cerr := ctx.Err(); cerr != nil {
			return cerr
		}
		var ex *exhaustedError
		var ue *UnreachableError
		if errors.As(err, &ex) || errors.As(err, &ue) {
			return err
		}
		if !c.reached.Load() && connectFailure(err) && (!Retryable(err) || attempt > c.connectRetries) {
			return &UnreachableError{Address: c.baseStr, Attempts: attempt, Took: time.Since(start).Round(100 * time.Millisecond), Err: err}
		}
		if !Retryable(err) {
			return err
		}
		if attempt >= p.MaxAttempts {
			return &exhaustedError{attempts: attempt, err: err}
		}
		d := p.delay(attempt, err)
		// With an injected Sleep no real time passes; counting the
		// waits keeps MaxElapsed meaningful in tests too.
		if max(time.Since(start), waited)+d > p.MaxElapsed {
			return &exhaustedError{attempts: attempt, limit: p.MaxElapsed, err: err}
		}
		if stats != nil {
			stats.Retries.Add(1)
		}
		c.retried.Add(1)
		if c.observer != nil {
			c.observer.Retry(resourceOf(ctx))
		}
		ev := c.log.Warn().Str("op", what).Int("attempt", attempt).Int("max_attempts", p.MaxAttempts).
			Dur("delay", d.Round(time.Millisecond)).AnErr("error", err)
		var ae *APIError
		if errors.As(err, &ae) {
			ev = ev.Int("status", ae.Status)
		}
		ev.Msg("retrying")
		if err := p.Sleep(ctx, d); err != nil {
			if cerr := ctx.Err(); cerr != nil {
				return cerr
			}
			return err
		}
		waited += d
	}
}

// UnreachableError is a request that could not connect to the interface
// (refused, no such host, no route) before the interface had answered
// once: a wrong address or port, or a service that is down. It is given
// up on after api.connect_retries, not the full retry policy.
type UnreachableError struct {
	Address  string // the base URL
	Attempts int
	Took     time.Duration
	Err      error
}

func (e *UnreachableError) Error() string {
	return fmt.Sprintf("cannot reach the interface at %s (api.base_url, or TALLY_BASE_URL): %v; tried %d times in %s: check the address and port, and that the service is up",
		redactURL(e.Address), e.Err, e.Attempts, e.Took)
}

func (e *UnreachableError) Unwrap() error { return e.Err }

// connectFailure reports an error of connecting, before any answer: the
// address is wrong or nothing listens there.
func connectFailure(err error) bool {
	if errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.EHOSTUNREACH) || errors.Is(err, syscall.ENETUNREACH) {
		return true
	}
	var dns *net.DNSError
	if errors.As(err, &dns) {
		return true
	}
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}
