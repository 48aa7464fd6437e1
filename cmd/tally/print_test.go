package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/xuri/excelize/v2"
)

// The demo month's workbook prints, as a controller saves it as PDF for the
// month's binder: LibreOffice renders it, and every page carries the footer
// (month, sheet, page N of M); the Summary, By project and By payment
// method take at most two pages each; each sheet is one page wide, so its
// last column is on its pages; Detail may run long.
func TestWorkbookPrintsAsPDF(t *testing.T) {
	soffice, err := exec.LookPath("soffice")
	if err != nil {
		t.Fatal("soffice (LibreOffice) is not installed: run the tests with scripts/test, which installs it")
	}
	pdftotext, err := exec.LookPath("pdftotext")
	if err != nil {
		t.Fatal("pdftotext (poppler-utils) is not installed: run the tests with scripts/test, which installs it")
	}
	dir := t.TempDir()
	if out, code, stderr := cli(t, "demo", "--dir", dir, "--log-level", "warn"); code != exitOK {
		t.Fatalf("demo: exit %d\n%s\n%s", code, out, stderr)
	}
	// The month's workbook; the demo's close writes the final beside it.
	books, _ := filepath.Glob(filepath.Join(dir, "reports", "*", "tally-cost-????-??.xlsx"))
	if len(books) != 1 {
		t.Fatalf("workbooks: %v", books)
	}
	book := books[0]
	month := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(book), "tally-cost-"), ".xlsx")

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	pdfDir := filepath.Join(dir, "pdf")
	cmd := exec.CommandContext(ctx, soffice, "-env:UserInstallation=file://"+filepath.Join(dir, "profile"),
		"--headless", "--convert-to", "pdf", "--outdir", pdfDir, book)
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("soffice: %v\n%s", err, msg)
	}
	pdf := filepath.Join(pdfDir, strings.TrimSuffix(filepath.Base(book), ".xlsx")+".pdf")
	text, err := exec.CommandContext(ctx, pdftotext, "-layout", pdf, "-").Output()
	if err != nil {
		t.Fatalf("pdftotext: %v", err)
	}

	footer := regexp.MustCompile(regexp.QuoteMeta(month) + ` · basis usage\s+(.+?)\s+Page (\d+) of (\d+) · generated`)
	pages := map[string][]string{} // sheet -> its pages' text
	all := strings.Split(strings.TrimRight(string(text), "\f"), "\f")
	for i, p := range all {
		m := footer.FindStringSubmatch(p)
		if m == nil {
			t.Fatalf("page %d of %d has no footer naming the month, sheet and page:\n%s", i+1, len(all), p)
		}
		if n, _ := strconv.Atoi(m[3]); n != len(all) {
			t.Errorf("page %d says of %s, the PDF has %d", i+1, m[3], len(all))
		}
		pages[m[1]] = append(pages[m[1]], p)
	}

	f, err := excelize.OpenFile(book)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, sheet := range []string{"Summary", "By project", "By payment method"} {
		if n := len(pages[sheet]); n == 0 || n > 2 {
			t.Errorf("%s prints on %d pages, want 1 or 2", sheet, n)
		}
	}
	for _, sheet := range []string{"By project", "By meter", "By payment method", "Rate card check", "Daily", "Detail"} {
		rows, err := f.GetRows(sheet)
		if err != nil || len(rows) == 0 {
			t.Fatalf("%s: %v", sheet, err)
		}
		last := rows[0][len(rows[0])-1]
		word := strings.Fields(last)[0]
		for i, p := range pages[sheet] {
			if !strings.Contains(p, word) {
				t.Errorf("%s page %d does not show its last column %q: the sheet is wider than the page", sheet, i+1, last)
			}
		}
	}
	if len(pages["Detail"]) < 2 {
		t.Errorf("Detail printed on %d pages; the demo month has thousands of rows", len(pages["Detail"]))
	}
	if _, err := os.Stat(pdf); err != nil {
		t.Fatal(err)
	}
}
