package store

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/tally-dev/tally"
)

// TestLoadNotesChangedMonths: a load records the months of date of the
// rows it replaced and of those it wrote, under its organization; for
// basis reported the window is on date_processed, so the months are the
// rows', not the window's. UsageChanges gives each partition once, after
// a time.
func TestLoadNotesChangedMonths(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	charged := func(d, processed time.Time) tally.MeterData {
		r := row(d, "streaming", "web", "1.5")
		r.DateProcessed = &processed
		return r
	}
	nov := date(t, "2026-11-02")
	q := tally.UsageQuery{Window: window(t, tally.Day, "2026-11-01", "2026-11-03"), ReportedDate: true, Organization: "acme"}
	// Charged in November: used in September and October.
	load(t, s, q, charged(date(t, "2026-09-30"), nov), charged(date(t, "2026-10-15"), nov))
	changes, first, err := UsageChanges(ctx, s.DB(), time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	equalLines(t, "changes", changesText(changes), []string{"acme 2026-09", "acme 2026-10"})

	// Fetched again: now only an August row. September and October lost
	// theirs, August gained one: all three changed.
	time.Sleep(time.Millisecond)
	load(t, s, q, charged(date(t, "2026-08-31"), nov))
	changes, latest, err := UsageChanges(ctx, s.DB(), first)
	if err != nil {
		t.Fatal(err)
	}
	equalLines(t, "changes after the first load", changesText(changes), []string{"acme 2026-08", "acme 2026-09", "acme 2026-10"})
	if !latest.After(first) {
		t.Fatalf("latest change %s is not after the first load's %s", latest, first)
	}
	if changes, _, err = UsageChanges(ctx, s.DB(), latest); err != nil || len(changes) != 0 {
		t.Fatalf("changes after the latest: %v, %v; want none", changesText(changes), err)
	}
}

func changesText(cs []UsageChange) []string {
	var out []string
	for _, c := range cs {
		out = append(out, fmt.Sprintf("%s %s", c.Organization, c.Month.Format("2006-01")))
	}
	return out
}
