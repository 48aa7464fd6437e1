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
// rows', not the window's; for basis usage they are the window's. UsageChanges gives each partition once, after
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

	// Basis usage: every row's date is in the window, so the load notes
	// the months the window overlaps, those without rows too, without
	// reading the rows.
	time.Sleep(time.Millisecond)
	uq := tally.UsageQuery{Window: window(t, tally.Day, "2026-10-20", "2026-12-05"), Organization: "globex"}
	load(t, s, uq, row(date(t, "2026-11-10"), "streaming", "web", "2.5"))
	if changes, _, err = UsageChanges(ctx, s.DB(), latest); err != nil {
		t.Fatal(err)
	}
	equalLines(t, "changes of a usage window", changesText(changes), []string{"globex 2026-10", "globex 2026-11", "globex 2026-12"})
}

func changesText(cs []UsageChange) []string {
	var out []string
	for _, c := range cs {
		out = append(out, fmt.Sprintf("%s %s", c.Organization, c.Month.Format("2006-01")))
	}
	return out
}

// TestUnstampedChangesAreNeverSkipped: a load stamps its changes only
// once it has committed, so no change becomes visible with a time before
// one an export has already seen. A change committed but not stamped (a
// kill between the commit and the stamp, or an export reading between
// them) is taken by every export, and opening the store stamps it after
// every recorded time.
func TestUnstampedChangesAreNeverSkipped(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	load(t, s, tally.UsageQuery{Window: window(t, tally.Day, "2026-10-01", "2026-10-02"), Organization: "acme"},
		row(date(t, "2026-10-01"), "encoding", "web", "1"))
	changes, seen, err := UsageChanges(ctx, s.DB(), time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	equalLines(t, "changes of the load", changesText(changes), []string{"acme 2026-10"})
	var unstamped int64
	if err := s.DB().QueryRow(`SELECT count(*) FROM usage_changes WHERE changed_at IS NULL`).Scan(&unstamped); err != nil || unstamped != 0 {
		t.Fatalf("%d changes unstamped after the load (%v); want it stamped once committed", unstamped, err)
	}

	// A load whose stamp a kill cut short.
	if _, err := s.DB().Exec(`INSERT INTO usage_changes VALUES ('acme', DATE '2026-11-01', NULL)`); err != nil {
		t.Fatal(err)
	}
	changes, _, err = UsageChanges(ctx, s.DB(), seen)
	if err != nil {
		t.Fatal(err)
	}
	equalLines(t, "changes after the seen time, one unstamped", changesText(changes), []string{"acme 2026-11"})

	path := s.Path()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	changes, latest, err := UsageChanges(ctx, s.DB(), seen)
	if err != nil {
		t.Fatal(err)
	}
	equalLines(t, "changes after the seen time, once reopened", changesText(changes), []string{"acme 2026-11"})
	if !latest.After(seen) {
		t.Fatalf("the reopened store stamped the change at %s, not after %s", latest, seen)
	}
}

// TestChangeTimesNeverGoBack: a change noted after one recorded with a
// later time (the clock was set back) takes a time after it, so an export
// that holds the earlier time does not skip it.
func TestChangeTimesNeverGoBack(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	ahead := time.Now().UTC().Add(time.Hour).Truncate(time.Microsecond)
	if _, err := s.DB().Exec(`INSERT INTO usage_changes VALUES ('acme', DATE '2026-09-01', ?)`, ahead); err != nil {
		t.Fatal(err)
	}
	load(t, s, tally.UsageQuery{Window: window(t, tally.Day, "2026-10-01", "2026-10-02"), Organization: "acme"},
		row(date(t, "2026-10-01"), "encoding", "web", "1"))
	changes, _, err := UsageChanges(ctx, s.DB(), ahead)
	if err != nil {
		t.Fatal(err)
	}
	equalLines(t, "changes after the time ahead", changesText(changes), []string{"acme 2026-10"})
}
