// Package schedules owns Tally's jobs and running them: the one-writer
// lock, the run record (Runner.Record, and Runner.RecordStep for a command
// that is one capability's work, such as tally close), cancellation, and
// the one path a job's steps take (Runner.Run, RunJob). It runs no
// capability's work itself: each capability registers its own step
// (ingest's fetch, reports' report, closes' close, deliver, alerts,
// export), and the command line hands in the token check
// (Runner.CheckToken: ingest.CheckOrgToken). It also runs the configured
// jobs on their cron times (Scheduler, `tally schedule`) with their health
// (/healthz, which also fails on stale usage: job.Freshness, from each
// fetch and, at start, from ScheduleOptions.Staleness, alerts.Staleness
// handed in) and Prometheus metrics (with the budgets' figures an alerts
// check hands over). A
// Runner's AsOf replays a day: it is "today" for every date decision
// (Runner.Today), and its budgets and workbooks read the forecasts as of
// that day's morning (store.AsOfConn), while its clock still stamps what
// happens. Every run ends one way of four, which the command line maps to
// its exit code: done; failed (nothing half-written); refused before
// anything was touched (an error that Is job.ErrRefused:
// closes.RefusedError, reports.EmptyMonthError, ingest.TokenExpiredError,
// the analysts' copy not made yet); or partial, one *job.Partial listing
// every failure of the run by kind, whatever step it came from. Every
// run's steps, a scheduled job's and `tally run`'s, take one path
// (runSteps).
// The command line only parses flags and calls in here.
package schedules
