// Package schedules owns Tally's jobs — fetch, report, and the nightly run
// that chains them — and running them: the one-writer lock, the run record,
// cancellation, and the demo that wires the simulated interface to the whole
// path. It also runs the configured jobs on their cron times (Scheduler,
// `tally schedule`) with their health (/healthz, which also fails on
// stale usage) and Prometheus metrics. A Runner's AsOf replays a day: it
// is "today" for every date decision, and its budgets and workbooks read
// the forecasts as of that day's morning (store.AsOfConn), while its
// clock still stamps what happens. Every run ends one way of four, which
// the command line maps to its exit code: done; failed (nothing
// half-written); refused before anything was touched (an error that Is
// job.ErrRefused: *RefusedError, *EmptyMonthError, *TokenExpiredError);
// or partial, one *job.Partial listing every failure of the run by kind,
// whatever step it came from. Every run's steps, a scheduled job's and
// `tally run`'s, take one path (runSteps).
// The command line only parses flags and calls in here.
package schedules
