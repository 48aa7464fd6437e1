package main

import (
	"encoding/json"
	"log/slog"
	"regexp"
	"strings"
	"testing"
	"time"
)

// tally --version and tally version print the same: the version, the
// commit and the DuckDB library's version.
func TestVersion(t *testing.T) {
	long, err := execCLI(t, "", "version")
	if err != nil {
		t.Fatal(err)
	}
	flag, err := execCLI(t, "", "--version")
	if err != nil {
		t.Fatal(err)
	}
	if long != flag {
		t.Errorf("tally version printed\n%s\ntally --version printed\n%s", long, flag)
	}
	want := regexp.MustCompile(`^tally \S+\ncommit: \S+.*\nduckdb: v\d+\.\d+\.\d+ \(\w+\)\ngo: go\S+ \S+/\S+\n$`)
	if !want.MatchString(long) {
		t.Errorf("tally version printed\n%s\nwant version, commit, duckdb and go lines", long)
	}
}

// Durations in logs carry their unit, in both formats.
func TestLogDurationsCarryTheirUnit(t *testing.T) {
	for _, format := range []string{"console", "json"} {
		var b strings.Builder
		log, err := newLogger(&globalFlags{logFormat: format, logLevel: "info"}, &b)
		if err != nil {
			t.Fatal(err)
		}
		log.Warn().Dur("delay", 36737*time.Millisecond).Msg("retrying")
		want := map[string]string{"console": "delay=36.737s", "json": `"delay":"36.737s"`}[format]
		if !strings.Contains(b.String(), want) {
			t.Errorf("%s log %q; want %s", format, b.String(), want)
		}
	}
}

// What a library logs through log/slog comes out of
// the run's logger: JSON when the run logs JSON, at its level, with the
// record's attributes.
func TestSlogGoesThroughTheRunsLogger(t *testing.T) {
	defer slog.SetDefault(slog.Default())
	var b strings.Builder
	if _, err := newLogger(&globalFlags{logFormat: "json", logLevel: "warn"}, &b); err != nil {
		t.Fatal(err)
	}
	slog.Info("below the run's level")
	slog.Warn("Overwrite produced fewer rows than deleted", "deleted", 3)
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 1 {
		t.Fatalf("logged %q; want the one warning", b.String())
	}
	var got map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &got); err != nil {
		t.Fatalf("%q is not a JSON log line: %v", lines[0], err)
	}
	if got["level"] != "warn" || got["message"] != "Overwrite produced fewer rows than deleted" || got["deleted"] != float64(3) || got["time"] == nil {
		t.Errorf("logged %v", got)
	}
}
