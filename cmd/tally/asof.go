package main

import (
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/tally-dev/tally"
	"github.com/tally-dev/tally/schedules"
)

// asOfEnv is the environment variable that sets --as-of when the flag is
// not given: a replay script sets it once for every command it runs.
const asOfEnv = "TALLY_AS_OF"

// asOfUsage is the flag's help, the same on every command that takes it.
const asOfUsage = "replay as of this UTC day, YYYY-MM-DD, no later than today: \"today\" for the lookback, close_after, the months, staleness and labels, and forecasts and budgets as of its morning (default $" + asOfEnv + ", else today)"

// addAsOf registers --as-of on cmd.
func addAsOf(cmd *cobra.Command, v *string) {
	cmd.Flags().StringVar(v, "as-of", "", asOfUsage)
}

// resolveAsOf reads --as-of, or TALLY_AS_OF when the flag is not given: the
// zero time when neither is set. A replay counts from the start of its
// day (00:00 UTC); a day later than the wall clock's is refused, since
// nothing can be known as of a day that has not come.
func resolveAsOf(flag string) (time.Time, error) {
	name, v := "--as-of", flag
	if v == "" {
		name, v = asOfEnv, os.Getenv(asOfEnv)
	}
	if v == "" {
		return time.Time{}, nil
	}
	d, err := time.Parse(tally.DateLayout, v)
	if err != nil {
		return time.Time{}, usageErr("%s %q is not a date: give a UTC day as YYYY-MM-DD, no later than today", name, v)
	}
	if today := tally.Day.Truncate(clock().UTC()); d.After(today) {
		return time.Time{}, usageErr("%s %q is later than today (%s UTC): a replay runs as of a day that has come, YYYY-MM-DD, at most %s", name, v, today.Format(tally.DateLayout), today.Format(tally.DateLayout))
	}
	return d, nil
}

// today is the day a command counts from: asOf when a replay gave one,
// else the clock.
func today(asOf time.Time) time.Time {
	if !asOf.IsZero() {
		return asOf
	}
	return clock().UTC()
}

// todayFunc is today as the clock the reports take.
func todayFunc(asOf time.Time) func() time.Time {
	return func() time.Time { return today(asOf) }
}

// withAsOf makes r a replay as of asOf (no change for the zero time).
func withAsOf(r *schedules.Runner, asOf time.Time) *schedules.Runner {
	r.AsOf = asOf
	return r
}
