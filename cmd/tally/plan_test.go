package main

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// setPlanClock fixes "now" for the test and restores the real clock.
func setPlanClock(t *testing.T, now time.Time) {
	t.Helper()
	old := clock
	clock = func() time.Time { return now }
	t.Cleanup(func() { clock = old })
}

func writePlanConfig(t *testing.T, yml string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "tally.yaml")
	if err := os.WriteFile(path, []byte(yml), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

const planHourConfig = "usage:\n  granularity: hour\n  start: 2026-01-01\n  lookback: 7d\n"

func TestPlanJSON81HourlyDays(t *testing.T) {
	setPlanClock(t, time.Date(2026, 3, 22, 10, 0, 0, 0, time.UTC))
	cfg := writePlanConfig(t, planHourConfig)
	want := `[
  {"start":"2026-01-01","end":"2026-02-01","granularity":"hour","reason":"backfill"},
  {"start":"2026-02-01","end":"2026-03-04","granularity":"hour","reason":"backfill"},
  {"start":"2026-03-04","end":"2026-03-23","granularity":"hour","reason":"backfill"}
]
`
	// --from and --to given, and left to their defaults (usage.start and
	// tomorrow): the same 81 days.
	for _, args := range [][]string{
		{"plan", "--config", cfg, "--from", "2026-01-01", "--to", "2026-03-23", "--format", "json"},
		{"plan", "--config", cfg, "--format", "json"},
	} {
		out, err := execCLI(t, "", args...)
		if err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		if out != want {
			t.Errorf("%v printed\n%s\nwant\n%s", args, out, want)
		}
		var decoded []map[string]string
		if err := json.Unmarshal([]byte(out), &decoded); err != nil || len(decoded) != 3 {
			t.Errorf("output is not a JSON array of 3 windows: %v", err)
		}
	}
}

func TestPlanTable(t *testing.T) {
	setPlanClock(t, time.Date(2026, 3, 22, 10, 0, 0, 0, time.UTC))
	cfg := writePlanConfig(t, planHourConfig)
	out, err := execCLI(t, "", "plan", "--config", cfg)
	if err != nil {
		t.Fatal(err)
	}
	want := `START       END         GRANULARITY  DAYS  REASON
2026-01-01  2026-02-01  hour         31    backfill
2026-02-01  2026-03-04  hour         31    backfill
2026-03-04  2026-03-23  hour         19    backfill
total: 3 windows, 81 days
`
	if out != want {
		t.Errorf("table:\n%s\nwant\n%s", out, want)
	}
}

func TestPlanUsageErrors(t *testing.T) {
	setPlanClock(t, time.Date(2026, 3, 22, 10, 0, 0, 0, time.UTC))
	cfg := writePlanConfig(t, planHourConfig)
	bad := writePlanConfig(t, "usage:\n  granularity: hourly\n  start: 2026-01-01\n")
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"bad from", []string{"plan", "--config", cfg, "--from", "2026-1-1"}, `--from: date "2026-1-1" is not a YYYY-MM-DD calendar date`},
		{"bad to", []string{"plan", "--config", cfg, "--to", "2026-02-30"}, `--to: date "2026-02-30" is not a YYYY-MM-DD`},
		{"to before from", []string{"plan", "--config", cfg, "--from", "2026-03-01", "--to", "2026-02-01"}, "--to 2026-02-01 must be after --from 2026-03-01"},
		{"to equals from", []string{"plan", "--config", cfg, "--from", "2026-03-01", "--to", "2026-03-01"}, "must be after"},
		{"default from after to", []string{"plan", "--config", cfg, "--to", "2025-12-01"}, "--to 2025-12-01 must be after --from 2026-01-01"},
		{"format", []string{"plan", "--config", cfg, "--format", "csv"}, `--format "csv" is not one of table, json`},
		{"no config", []string{"plan"}, "--config is required"},
		{"missing config", []string{"plan", "--config", filepath.Join(t.TempDir(), "nope.yaml")}, "no such file"},
		{"invalid config", []string{"plan", "--config", bad}, `usage.granularity: "hourly" is not one of hour, day, week, month, year`},
		{"bad granularity", []string{"plan", "--config", cfg, "--granularity", "daily"}, "--granularity"},
		{"unknown flag", []string{"plan", "--config", cfg, "--window", "7d"}, "unknown flag"},
		{"argument", []string{"plan", "--config", cfg, "extra"}, "unknown command"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, err := execCLI(t, "", tc.args...)
			var ue usageError
			if !errors.As(err, &ue) {
				t.Fatalf("error %v is not a usage error (exit 2)", err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q, want it to contain %q", err, tc.want)
			}
			if out != "" {
				t.Errorf("printed %q on a usage error", out)
			}
		})
	}
}

// usage.window is sized for the config's granularity: planning another
// granularity whose buckets it cannot hold takes the largest windows.
func TestPlanOtherGranularityIgnoresAWindowItCannotHold(t *testing.T) {
	setPlanClock(t, time.Date(2026, 3, 22, 10, 0, 0, 0, time.UTC))
	cfg := writePlanConfig(t, "usage:\n  granularity: day\n  start: 2026-01-01\n  window: 7d\n")
	out, err := execCLI(t, "", "plan", "--config", cfg, "--granularity", "month", "--format", "json")
	if err != nil {
		t.Fatal(err)
	}
	if want := "[\n  {\"start\":\"2026-01-01\",\"end\":\"2026-04-01\",\"granularity\":\"month\",\"reason\":\"backfill\"}\n]\n"; out != want {
		t.Errorf("printed\n%s\nwant\n%s", out, want)
	}
	// At the config's own granularity the window still applies.
	out, err = execCLI(t, "", "plan", "--config", cfg, "--format", "json")
	if err != nil || strings.Count(out, `"granularity":"day"`) != 12 {
		t.Errorf("day plan with 7d windows: %v\n%s", err, out)
	}
}
