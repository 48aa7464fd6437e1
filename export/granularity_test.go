package export

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/tally-dev/tally"
	"github.com/tally-dev/tally/configs"
	"github.com/tally-dev/tally/internal/testkit/runtest"
	"github.com/tally-dev/tally/job"
	"github.com/tally-dev/tally/reports"
)

// The FOCUS export bills every row in a month: at week granularity it is
// refused as a usage error naming usage.granularity, and nothing is written.
func TestFOCUSExportRefusesWeek(t *testing.T) {
	h := runtest.NewHarness(t, runtest.Setup{Granularity: tally.Week, Window: "4w", Start: "2025-01-01", Now: "2025-02-10T12:00:00Z"})
	h.MustFetch()
	dir := t.TempDir()
	err := h.Published(context.Background(), func(env *job.Env) error {
		_, err := Run(context.Background(), env, Request{Dir: dir, Format: configs.ExportFOCUS})
		return err
	})
	var ge *reports.GranularityError
	if !errors.As(err, &ge) {
		t.Fatalf("FOCUS export at week: %v, want a *reports.GranularityError", err)
	}
	for _, s := range []string{`usage.granularity "week"`, "the FOCUS export", "hour, day, month"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q does not say %q", err, s)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("the refused export wrote %d entries", len(entries))
	}
}
