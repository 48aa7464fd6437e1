package schedules

// MetricsText is the scheduler's metrics as its endpoint serves them, for
// the external tests (package schedules_test), which run on runtest's
// harness: runtest imports schedules, so they cannot be internal.
func MetricsText(s *Scheduler) []byte { return s.mon.metrics() }
