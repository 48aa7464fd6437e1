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

// TestChangesAreNotedInCommitOrder: an export commits the changes after
// the time its last commit holds, so a change must never become visible
// after one with a later time. Load A notes its change and is held just
// before its commit; load B, started then, must not commit a change (with
// a later time) while A's is still unseen. Once A commits, B does, and
// its time is after A's.
func TestChangesAreNotedInCommitOrder(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	qa := tally.UsageQuery{Window: window(t, tally.Day, "2026-10-01", "2026-10-02"), Organization: "acme"}
	qb := tally.UsageQuery{Window: window(t, tally.Day, "2026-11-01", "2026-11-02"), Organization: "acme"}
	held, release := make(chan struct{}), make(chan struct{})
	s.beforeCommit = func() {
		s.beforeCommit = nil // B passes straight through
		close(held)
		<-release
	}
	aDone, bDone := make(chan error, 1), make(chan error, 1)
	go func() {
		_, err := s.LoadWindow(ctx, qa, NewRunID(), rowsOf(row(date(t, "2026-10-01"), "encoding", "web", "1")))
		aDone <- err
	}()
	<-held
	go func() {
		_, err := s.LoadWindow(ctx, qb, NewRunID(), rowsOf(row(date(t, "2026-11-01"), "encoding", "web", "2")))
		bDone <- err
	}()
	select {
	case err := <-bDone:
		changes, _, _ := UsageChanges(ctx, s.DB(), time.Time{})
		t.Fatalf("load B committed (%v) while A's noted change was not yet committed: visible %v; an export now would skip A's change for good",
			err, changesText(changes))
	case <-time.After(300 * time.Millisecond):
	}
	close(release)
	if err := <-aDone; err != nil {
		t.Fatal(err)
	}
	if err := <-bDone; err != nil {
		t.Fatal(err)
	}
	var a, b time.Time
	if err := s.DB().QueryRow(`SELECT max(changed_at) FILTER (WHERE month = DATE '2026-10-01'), max(changed_at) FILTER (WHERE month = DATE '2026-11-01') FROM usage_changes`).Scan(&a, &b); err != nil {
		t.Fatal(err)
	}
	if !b.After(a) {
		t.Errorf("B's change at %s is not after A's at %s, though B committed after A", b, a)
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
