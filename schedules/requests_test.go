package schedules_test

import (
	"context"
	"strings"
	"testing"

	"github.com/tally-dev/tally/configs"
	"github.com/tally-dev/tally/internal/testkit/runtest"
	"github.com/tally-dev/tally/schedules"
)

// A scheduler's jobs count their clients' requests in its metrics, by
// resource and status, references included.
func TestSchedulerCountsAPIRequests(t *testing.T) {
	h := runtest.NewHarness(t, runtest.Setup{Granularity: "day", Start: "2026-09-01", Now: "2026-10-20T12:00:00Z"})
	job := configs.Job{Name: "nightly", Cron: "@daily", Run: []string{"fetch"}}
	h.Runner.Config.Schedule.Jobs = []configs.Job{job}
	s, err := schedules.NewScheduler(h.Runner, schedules.ScheduleOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.Runner.RunJob(context.Background(), "schedule", job); err != nil {
		t.Fatal(err)
	}
	text := string(schedules.MetricsText(s))
	for _, want := range []string{`tally_api_requests_total{resource="usage",status="200"}`, `tally_api_requests_total{resource="payment_methods",status="200"}`, `tally_api_requests_total{resource="rate_card",status="200"}`} {
		if !strings.Contains(text, want) {
			t.Errorf("metrics have no %s:\n%s", want, text)
		}
	}
}
