package configs

import (
	"fmt"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// cronParser reads the classic five crontab fields and descriptors such as
// @daily and @every 5m. Seconds are left out on purpose: a crontab line, a
// systemd timer and a Kubernetes CronJob all count in minutes, and a
// schedule copied between them must mean the same thing.
var cronParser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// cronHelp is what a bad cron spec's message says is allowed.
const cronHelp = `five fields (minute hour day-of-month month day-of-week), e.g. "CRON_TZ=UTC 30 2 * * *", or a descriptor: @yearly, @monthly, @weekly, @daily, @hourly or "@every 6h"; an optional CRON_TZ=<zone> prefix sets the time zone (UTC when absent)`

// ParseCron reads a job's cron spec: five crontab fields or a descriptor,
// optionally prefixed with CRON_TZ=<IANA zone> (or TZ=). Without a prefix
// the schedule is in UTC, never the machine's local zone, so a container
// and a laptop agree on when a job runs. A spec that can never fire (30
// February) is refused too.
func ParseCron(spec string) (cron.Schedule, error) {
	spec = strings.TrimSpace(spec)
	loc := time.UTC
	rest := spec
	if tz, ok := cutZonePrefix(spec); ok {
		zone, after, _ := strings.Cut(tz, " ")
		rest = strings.TrimSpace(after)
		if zone == "" {
			return nil, fmt.Errorf("%q names no time zone after the =; give an IANA zone such as UTC or Europe/Berlin", spec)
		}
		l, err := time.LoadLocation(zone)
		if err != nil {
			return nil, fmt.Errorf("%q: time zone %q is unknown; give an IANA zone such as UTC or Europe/Berlin", spec, zone)
		}
		loc = l
	}
	if rest == "" {
		return nil, fmt.Errorf("%q holds no schedule; give %s", spec, cronHelp)
	}
	if d, ok := strings.CutPrefix(rest, "@every "); ok {
		if err := checkEvery(strings.TrimSpace(d)); err != nil {
			return nil, fmt.Errorf("%q: %v", spec, err)
		}
	}
	sched, err := parseCron(rest)
	if err != nil {
		return nil, fmt.Errorf("%q is not a cron spec (%v); give %s", spec, err, cronHelp)
	}
	if s, ok := sched.(*cron.SpecSchedule); ok {
		s.Location = loc
	}
	if sched.Next(time.Now()).IsZero() {
		return nil, fmt.Errorf("%q never fires (no such day in the next five years); give %s", spec, cronHelp)
	}
	return sched, nil
}

func cutZonePrefix(spec string) (string, bool) {
	for _, p := range []string{"CRON_TZ=", "TZ="} {
		if rest, ok := strings.CutPrefix(spec, p); ok {
			return rest, true
		}
	}
	return "", false
}

// checkEvery refuses what robfig/cron would silently round: a zero,
// negative or sub-second interval becomes one second there.
func checkEvery(s string) error {
	d, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("@every %q is not a duration such as 30s, 5m or 6h", s)
	}
	if d < time.Second || d%time.Second != 0 {
		return fmt.Errorf("@every %s must be a whole number of seconds, at least 1s", s)
	}
	return nil
}

// parseCron calls the parser, turning a panic into an error: robfig/cron
// v3.0.1 indexes its input without checking on a few malformed specs.
func parseCron(spec string) (s cron.Schedule, err error) {
	defer func() {
		if r := recover(); r != nil {
			s, err = nil, fmt.Errorf("unreadable: %v", r)
		}
	}()
	return cronParser.Parse(spec)
}
