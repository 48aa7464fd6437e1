package store

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// Writers appending while runs fold the journal lose nothing and record
// nothing twice.
func TestJournalAppendsWhileFolding(t *testing.T) {
	ctx := context.Background()
	db := filepath.Join(t.TempDir(), "tally.duckdb")
	st, err := Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	const writers, each = 4, 25
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				fin := time.Now().UTC()
				r := RunInfo{ID: NewRunID(), Job: fmt.Sprintf("w%d", w), Command: "fetch", Started: fin, Finished: &fin, Status: RunSkipped, Error: fmt.Sprint(i)}
				if err := AppendJournal(db, r); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	folded := 0
	for running := true; running; {
		select {
		case <-done:
			running = false
		default:
		}
		n, err := st.FoldJournal(ctx, db)
		if err != nil {
			t.Fatal(err)
		}
		folded += n
	}
	n, err := st.FoldJournal(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	folded += n
	var rows int
	if err := st.DB().QueryRow(`SELECT count(DISTINCT id) FROM runs WHERE status = 'skipped'`).Scan(&rows); err != nil {
		t.Fatal(err)
	}
	if rows != writers*each || folded != writers*each {
		t.Fatalf("%d runs recorded, %d folded; %d were noted", rows, folded, writers*each)
	}
}

// A torn last line (a writer killed mid-write) is left out; the rest is
// read.
func TestJournalTornLine(t *testing.T) {
	db := filepath.Join(t.TempDir(), "tally.duckdb")
	fin := time.Now().UTC()
	r := RunInfo{ID: NewRunID(), Command: "run", Started: fin, Finished: &fin, Status: RunSkipped}
	if err := AppendJournal(db, r); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(JournalPath(db), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"id":"01a1fca4-8da7-7e9e-ae93-10c6eb`)
	f.Close()
	got, err := PendingRuns(db)
	if err != nil || len(got) != 1 || got[0].ID != r.ID {
		t.Fatalf("pending %+v, %v", got, err)
	}
}
