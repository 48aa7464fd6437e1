package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tally-dev/tally/internal/testkit/printcheck"
	"github.com/tally-dev/tally/job"
)

// The demo month's workbook (sharedDemo's) prints legibly, as a controller saves it as
// PDF for the month's binder: LibreOffice prints it, and on every page no
// word overprints another or is cut off, none is under 7 pt, the footer
// names the month, sheet and page of how many, and every sheet's header
// is on its first pages (printcheck.Legible). The demo month is hourly:
// its Detail sheet holds 10,000+ rows, on screen; on paper it is one page
// that says so. The Summary takes three pages at most, By project one or two.
func TestWorkbookPrintsAsPDF(t *testing.T) {
	tools, err := printcheck.Find()
	if err != nil {
		t.Fatal(err)
	}
	demo := sharedDemo(t)
	if demo.code != job.ExitOK {
		t.Fatalf("demo: exit %d\n%s\n%s", demo.code, demo.out, demo.stderr)
	}
	// The month's workbook; the demo's close writes the final beside it.
	books, _ := filepath.Glob(filepath.Join(demo.dir, "reports", "*", "tally-cost-????-??.xlsx"))
	if len(books) != 1 {
		t.Fatalf("workbooks: %v", books)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	start := time.Now()
	pdf, err := tools.ToPDF(ctx, books[0], t.TempDir())
	t.Logf("converted in %v", time.Since(start))
	if err != nil {
		t.Fatal(err)
	}
	pages, err := tools.Pages(ctx, pdf)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("read in %v", time.Since(start))
	printcheck.Legible(t, books[0], pages)
	t.Logf("checked in %v", time.Since(start))
	by := printcheck.BySheet(pages)
	// The Summary opens with the month's story (its charts, movers and
	// budgets): three pages at most.
	for sheet, most := range map[string]int{"Summary": 3, "By project": 2} {
		if n := len(by[sheet]); n == 0 || n > most {
			t.Errorf("%s prints on %d pages, want 1 to %d", sheet, n, most)
		}
	}
	// The demo month's 10,000+ rows are on screen; on paper Detail is one
	// page saying so.
	if n := len(by["Detail"]); n != 1 {
		t.Errorf("Detail printed on %d pages, want 1", n)
	} else if text := by["Detail"][0].Text(); !strings.Contains(text, "rows, all on screen, not on paper") {
		t.Errorf("Detail's page does not say its rows are on screen:\n%.400s", text)
	}
}
