package job

import "time"

// Clock is the time source every part of a run reads, injected once (the
// runner's, copied into each step's Env) so tests and replays move time
// in one place. nil is the wall clock.
type Clock func() time.Time

// Now is the clock's time, in UTC.
func (c Clock) Now() time.Time {
	if c == nil {
		return time.Now().UTC()
	}
	return c().UTC()
}
