package configs

import (
	"strings"
	"testing"
	"time"
)

func TestParseCron(t *testing.T) {
	// A Monday in winter: Berlin is UTC+1, New York UTC-5.
	from := time.Date(2026, 1, 12, 10, 0, 0, 0, time.UTC)
	tests := []struct {
		spec string
		next time.Time // the first activation after from, in UTC
	}{
		{"CRON_TZ=UTC 30 2 * * *", time.Date(2026, 1, 13, 2, 30, 0, 0, time.UTC)},
		{"30 2 * * *", time.Date(2026, 1, 13, 2, 30, 0, 0, time.UTC)}, // UTC, not the machine's zone
		{"  30 11 * * *  ", time.Date(2026, 1, 12, 11, 30, 0, 0, time.UTC)},
		{"CRON_TZ=Europe/Berlin 0 6 * * *", time.Date(2026, 1, 13, 5, 0, 0, 0, time.UTC)},
		{"TZ=America/New_York @daily", time.Date(2026, 1, 13, 5, 0, 0, 0, time.UTC)},
		{"@daily", time.Date(2026, 1, 13, 0, 0, 0, 0, time.UTC)},
		{"@hourly", time.Date(2026, 1, 12, 11, 0, 0, 0, time.UTC)},
		{"@weekly", time.Date(2026, 1, 18, 0, 0, 0, 0, time.UTC)},
		{"@every 5m", from.Add(5 * time.Minute)},
		{"@every 1s", from.Add(time.Second)},
		{"0 0 29 2 *", time.Date(2028, 2, 29, 0, 0, 0, 0, time.UTC)},
		{"*/15 8-17 * * MON-FRI", time.Date(2026, 1, 12, 10, 15, 0, 0, time.UTC)},
	}
	for _, tc := range tests {
		s, err := ParseCron(tc.spec)
		if err != nil {
			t.Errorf("ParseCron(%q): %v", tc.spec, err)
			continue
		}
		if got := s.Next(from).UTC(); !got.Equal(tc.next) {
			t.Errorf("ParseCron(%q).Next(%s) = %s, want %s", tc.spec, from, got, tc.next)
		}
	}
}

func TestParseCronRefuses(t *testing.T) {
	tests := []struct{ spec, want string }{
		{"x", `"x" is not a cron spec`},
		{"* * * *", "is not a cron spec"},
		{"0 * * * * *", "is not a cron spec"}, // no seconds field
		{"61 * * * *", "is not a cron spec"},
		{"@fortnightly", "is not a cron spec"},
		{"CRON_TZ=UTC", "holds no schedule"},
		{"CRON_TZ=UTC ", "holds no schedule"},
		{"TZ=", "names no time zone"},
		{"CRON_TZ= 0 0 * * *", "names no time zone"},
		{"CRON_TZ=Mars/Olympus 0 0 * * *", `time zone "Mars/Olympus" is unknown`},
		{"@every 0s", "at least 1s"},
		{"@every 500ms", "at least 1s"},
		{"@every -5m", "at least 1s"},
		{"@every 1500ms", "whole number of seconds"},
		{"@every soon", `"soon" is not a duration`},
		{"0 0 30 2 *", "never fires"},
		{"0 0 31 4 *", "never fires"},
	}
	for _, tc := range tests {
		_, err := ParseCron(tc.spec)
		if err == nil {
			t.Errorf("ParseCron(%q) accepted it", tc.spec)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseCron(%q) = %v, want it to say %q", tc.spec, err, tc.want)
		}
		if !strings.Contains(err.Error(), "five fields") && !strings.Contains(err.Error(), "IANA zone") &&
			!strings.Contains(err.Error(), "1s") && !strings.Contains(err.Error(), "duration") {
			t.Errorf("ParseCron(%q) = %v: says nothing of what is allowed", tc.spec, err)
		}
	}
}

// A config with a bad cron spec is refused by Load, so every command (not
// only tally schedule) stops before touching anything, and the message
// names the job.
func TestConfigRefusesBadCron(t *testing.T) {
	yml := minimal + "schedule:\n  jobs:\n    - {name: nightly, cron: '@daily', run: [fetch]}\n    - {name: hourly, cron: '0 * * *', run: [fetch]}\n"
	_, err := Parse([]byte(yml), "", noEnv)
	ce, ok := err.(*Error)
	if !ok || len(ce.Problems) != 1 {
		t.Fatalf("error %v, want one problem", err)
	}
	want := `schedule.jobs[1].cron: job "hourly": "0 * * *" is not a cron spec`
	if !strings.HasPrefix(ce.Problems[0], want) || !strings.HasSuffix(ce.Problems[0], "(line 6)") {
		t.Fatalf("problem %q, want it to start %q and name line 6", ce.Problems[0], want)
	}
}
