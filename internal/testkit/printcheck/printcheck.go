package printcheck

import (
	"bytes"
	"context"
	"encoding/xml"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/xuri/excelize/v2"
)

// MinPoints is the smallest text size a printed page may carry.
const MinPoints = 7.0

// heightPerPoint is how tall pdftotext draws a word's box per point of its
// font size, measured: 11 pt text printed at 100 % has a 14.3 pt box. That
// is DejaVu Sans, which LibreOffice prints the workbook's Calibri with where
// Carlito is not installed (scripts/test's apt-get install brings DejaVu
// and Liberation, not Carlito). A font with less ascent and descent, like
// Carlito, draws smaller boxes, so sizes read low: the check errs strict.
const heightPerPoint = 1.30

// Word is one word on a page and its box, in points from the page's top
// left corner.
type Word struct {
	Text                   string
	XMin, YMin, XMax, YMax float64
}

// Points is the word's font size as read from its box's height.
func (w Word) Points() float64 { return (w.YMax - w.YMin) / heightPerPoint }

// Page is one printed page: its words, in reading order, and the sheet its
// footer names ("" when the footer names none, or not this page's number
// of the document's pages).
type Page struct {
	Number        int
	Width, Height float64
	Sheet         string
	Words         []Word
}

// Text is the page's words joined by spaces.
func (p Page) Text() string {
	var s []string
	for _, w := range p.Words {
		s = append(s, w.Text)
	}
	return strings.Join(s, " ")
}

// Tools are the programs a check runs: LibreOffice's soffice and poppler's
// pdftotext. Find returns what is missing, so a test can say how to
// install it rather than skip.
type Tools struct{ Soffice, Pdftotext string }

// Find looks the tools up on PATH.
func Find() (Tools, error) {
	var t Tools
	var err error
	if t.Soffice, err = exec.LookPath("soffice"); err != nil {
		return t, fmt.Errorf("soffice (LibreOffice) is not installed: run the tests with scripts/test, which installs it")
	}
	if t.Pdftotext, err = exec.LookPath("pdftotext"); err != nil {
		return t, fmt.Errorf("pdftotext (poppler-utils) is not installed: run the tests with scripts/test, which installs it")
	}
	return t, nil
}

// ToPDF prints the workbook at xlsx to a PDF in dir with LibreOffice, in a
// profile of its own under dir (a shared profile would make parallel
// conversions wait for each other), and returns the PDF's path.
func (t Tools) ToPDF(ctx context.Context, xlsx, dir string) (string, error) {
	pdfs, err := t.ToPDFs(ctx, dir, xlsx)
	if err != nil {
		return "", err
	}
	return pdfs[0], nil
}

// ToPDFs is ToPDF for several workbooks (of different file names) in one
// LibreOffice run: each start of LibreOffice costs seconds of CPU.
func (t Tools) ToPDFs(ctx context.Context, dir string, xlsx ...string) ([]string, error) {
	out := filepath.Join(dir, "pdf")
	args := append([]string{"-env:UserInstallation=file://" + filepath.Join(dir, "lo-profile"),
		"--headless", "--convert-to", "pdf", "--outdir", out}, xlsx...)
	if msg, err := exec.CommandContext(ctx, t.Soffice, args...).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("soffice --convert-to pdf %s: %w\n%s", strings.Join(xlsx, " "), err, msg)
	}
	pdfs := make([]string, len(xlsx))
	for i, x := range xlsx {
		pdfs[i] = filepath.Join(out, strings.TrimSuffix(filepath.Base(x), filepath.Ext(x))+".pdf")
		if err := keep(x, pdfs[i]); err != nil {
			return nil, err
		}
	}
	return pdfs, nil
}

// KeepEnv names a directory the printed workbooks and their PDFs are
// copied to, to be looked at after the test's temporary directory is gone:
// a proof checks words' boxes, a person sees the page.
const KeepEnv = "PRINTCHECK_KEEP"

func keep(files ...string) error {
	dir := os.Getenv(KeepEnv)
	if dir == "" {
		return nil
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(f)), b, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// footerSheet finds the sheet's name in the footer the workbook prints:
// "<month> · basis <basis>   <sheet>   Page N of M · generated …".
var footerSheet = regexp.MustCompile(`· basis \S+ (.+?) Page (\d+) of (\d+) · generated`)

// Pages reads every word's box of the PDF.
func (t Tools) Pages(ctx context.Context, pdf string) ([]Page, error) {
	out, err := exec.CommandContext(ctx, t.Pdftotext, "-bbox-layout", pdf, "-").Output()
	if err != nil {
		return nil, fmt.Errorf("pdftotext -bbox-layout %s: %w", pdf, err)
	}
	return parse(out)
}

func parse(doc []byte) ([]Page, error) {
	var pages []Page
	d := xml.NewDecoder(bytes.NewReader(doc))
	d.Strict = false
	d.Entity = xml.HTMLEntity
	var cur *Page
	for {
		tok, err := d.Token()
		if err != nil {
			break // the end of the document, or of what can be read
		}
		se, ok := tok.(xml.StartElement)
		if !ok {
			continue
		}
		switch se.Name.Local {
		case "page":
			pages = append(pages, Page{Number: len(pages) + 1})
			cur = &pages[len(pages)-1]
			cur.Width, cur.Height = attr(se, "width"), attr(se, "height")
		case "word":
			if cur == nil {
				return nil, fmt.Errorf("pdftotext output has a word outside a page")
			}
			var text string
			if err := d.DecodeElement(&text, &se); err != nil {
				return nil, fmt.Errorf("read a word of page %d: %w", cur.Number, err)
			}
			cur.Words = append(cur.Words, Word{Text: text,
				XMin: attr(se, "xMin"), YMin: attr(se, "yMin"), XMax: attr(se, "xMax"), YMax: attr(se, "yMax")})
		}
	}
	if len(pages) == 0 {
		return nil, fmt.Errorf("pdftotext found no page")
	}
	for i := range pages {
		if m := footerSheet.FindStringSubmatch(footer(pages[i])); m != nil &&
			m[2] == strconv.Itoa(i+1) && m[3] == strconv.Itoa(len(pages)) {
			pages[i].Sheet = m[1]
		}
	}
	return pages, nil
}

// footer is the words of the page's bottom line, left to right.
func footer(p Page) string {
	var bottom []Word
	low := 0.0
	for _, w := range p.Words {
		low = max(low, w.YMax)
	}
	for _, w := range p.Words {
		if w.YMax > low-2 {
			bottom = append(bottom, w)
		}
	}
	sort.Slice(bottom, func(i, j int) bool { return bottom[i].XMin < bottom[j].XMin })
	var s []string
	for _, w := range bottom {
		s = append(s, w.Text)
	}
	return strings.Join(s, " ")
}

func attr(se xml.StartElement, name string) float64 {
	for _, a := range se.Attr {
		if a.Name.Local == name {
			var v float64
			fmt.Sscan(a.Value, &v)
			return v
		}
	}
	return 0
}

// Two words print over each other when their boxes overlap by more than
// overlapSlack points across and by more than lineOverlap of the shorter
// box's height down. Boxes are drawn from the font's ascent to its
// descent, taller than the lines of a wrapped paragraph are set apart, so
// the lines of one cell overlap a little without their letters touching;
// text printed over text, or cut off by the next cell, overlaps by far
// more.
const (
	overlapSlack = 1.0
	lineOverlap  = 0.3
)

// Overlaps lists the pairs of the page's words printed over each other.
func Overlaps(p Page) []string {
	ws := append([]Word(nil), p.Words...)
	sort.Slice(ws, func(i, j int) bool { return ws[i].XMin < ws[j].XMin })
	var out []string
	for i, a := range ws {
		for _, b := range ws[i+1:] {
			if b.XMin >= a.XMax-overlapSlack {
				break
			}
			dx := min(a.XMax, b.XMax) - max(a.XMin, b.XMin)
			dy := min(a.YMax, b.YMax) - max(a.YMin, b.YMin)
			if dx > overlapSlack && dy > lineOverlap*min(a.YMax-a.YMin, b.YMax-b.YMin) {
				out = append(out, fmt.Sprintf("page %d (%s): %q at (%.0f,%.0f) overprints %q at (%.0f,%.0f)",
					p.Number, p.Sheet, a.Text, a.XMin, a.YMin, b.Text, b.XMin, b.YMin))
			}
		}
	}
	return out
}

// Small lists the words of the page printed under MinPoints.
func Small(p Page) []string {
	var out []string
	for _, w := range p.Words {
		if pt := w.Points(); pt < MinPoints {
			out = append(out, fmt.Sprintf("page %d (%s): %q printed at %.1f pt", p.Number, p.Sheet, w.Text, pt))
		}
	}
	return out
}

// BySheet groups the pages by the sheet their footer names, in order.
func BySheet(pages []Page) map[string][]Page {
	out := map[string][]Page{}
	for _, p := range pages {
		out[p.Sheet] = append(out[p.Sheet], p)
	}
	return out
}

// FirstBand is the pages that print a sheet's first rows: one page when
// the sheet is one page wide, the pages across when it runs across
// (printed over, then down). The band ends before the first page whose
// first line, the repeated header, is the first page's again.
func FirstBand(pages []Page) []Page {
	if len(pages) == 0 {
		return nil
	}
	first := firstLine(pages[0])
	for i := 1; i < len(pages); i++ {
		if firstLine(pages[i]) == first {
			return pages[:i]
		}
	}
	return pages
}

// firstLine is the words of the page's topmost line.
func firstLine(p Page) string {
	if len(p.Words) == 0 {
		return ""
	}
	top := p.Words[0].YMin
	for _, w := range p.Words {
		top = min(top, w.YMin)
	}
	var s []string
	for _, w := range p.Words {
		if w.YMin < top+1 {
			s = append(s, w.Text)
		}
	}
	return strings.Join(s, " ")
}

// Legible fails t unless the PDF's pages print the workbook at xlsx
// legibly: every page's footer names its sheet and the page count, every
// sheet prints, no word on a page overprints another, none is under
// MinPoints, the words of every sheet's first row (its header, or the
// Summary's title) are on the pages that print its first rows, and on
// every page of a sheet that repeats its first row (print titles). A sheet
// with a print area is held to the cells inside it: the rest is on screen,
// not on paper.
func Legible(t testing.TB, xlsx string, pages []Page) {
	t.Helper()
	f, err := excelize.OpenFile(xlsx)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var problems []string
	for _, p := range pages {
		if p.Sheet == "" {
			problems = append(problems, fmt.Sprintf("page %d has no footer naming its sheet: %.200s", p.Number, p.Text()))
		}
		problems = append(problems, Overlaps(p)...)
		problems = append(problems, Small(p)...)
	}
	by := BySheet(pages)
	for _, sheet := range f.GetSheetList() {
		printed := by[sheet]
		if len(printed) == 0 {
			problems = append(problems, fmt.Sprintf("sheet %s is not printed", sheet))
			continue
		}
		rows, err := f.Rows(sheet)
		if err != nil {
			t.Fatal(err)
		}
		var first []string
		if rows.Next() {
			if first, err = rows.Columns(); err != nil {
				t.Fatal(err)
			}
		}
		rows.Close()
		area := printArea(f, sheet)
		if len(first) > area.cols {
			first = first[:area.cols]
		}
		on, anywhere := map[string]bool{}, map[string]bool{}
		for _, p := range FirstBand(printed) {
			for _, w := range p.Words {
				on[w.Text] = true
			}
		}
		for _, p := range printed {
			for _, w := range p.Words {
				anywhere[w.Text] = true
			}
		}
		problems = append(problems, cutOff(t, f, sheet, area, anywhere)...)
		// One page wide: each page carries the whole header row.
		if repeatsFirstRow(f, sheet) && len(FirstBand(printed)) == 1 {
			problems = append(problems, headerOnEveryPage(printed, first)...)
		}
		if len(first) > 1 {
			problems = append(problems, repeatedColumn(printed, first[1])...)
		}
		for _, h := range first {
			for _, w := range strings.Fields(h) {
				if !on[w] {
					problems = append(problems, fmt.Sprintf("sheet %s: %q of its first row %q is not on its first pages (%d to %d)",
						sheet, w, h, printed[0].Number, FirstBand(printed)[len(FirstBand(printed))-1].Number))
				}
			}
		}
	}
	if len(problems) > 0 {
		const most = 60
		t.Errorf("the workbook does not print legibly (%d pages): %d problems, the first:\n%s", len(pages), len(problems),
			strings.Join(problems[:min(most, len(problems))], "\n"))
	}
}

// cutOff lists the words of the sheet's text cells that are printed
// nowhere on its pages: cut off by the next cell or the page's edge, or
// broken inside the word because its column is narrower than it.
func cutOff(t testing.TB, f *excelize.File, sheet string, area Area, printed map[string]bool) []string {
	t.Helper()
	rows, err := f.Rows(sheet)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	cut := 0
	for r := 1; r <= area.rows && rows.Next(); r++ {
		cols, err := rows.Columns(excelize.Options{RawCellValue: true})
		if err != nil {
			t.Fatal(err)
		}
		for c, v := range cols[:min(len(cols), area.cols)] {
			if v == "" || !strings.ContainsAny(v, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ") {
				continue
			}
			ref, _ := excelize.CoordinatesToCellName(c+1, r)
			if typ, err := f.GetCellType(sheet, ref); err != nil || (typ != excelize.CellTypeSharedString && typ != excelize.CellTypeInlineString) {
				continue
			}
			for _, w := range strings.Fields(v) {
				if !printed[w] && !brokenAtHyphens(w, printed) {
					if cut++; cut <= 5 {
						out = append(out, fmt.Sprintf("sheet %s cell %s: %q of %.60q is printed nowhere: cut off", sheet, ref, w, v))
					}
					break
				}
			}
		}
	}
	if cut > 5 {
		out = append(out, fmt.Sprintf("sheet %s: %d more cells cut off", sheet, cut-5))
	}
	return out
}

// Area is the part of a sheet that prints: columns 1 to cols, rows 1 to
// rows; the whole sheet when it names no print area.
type Area struct{ cols, rows int }

// printArea reads the sheet's print area (_xlnm.Print_Area), which starts
// at A1 where the workbook sets one.
func printArea(f *excelize.File, sheet string) Area {
	for _, d := range f.GetDefinedName() {
		if d.Name != "_xlnm.Print_Area" || d.Scope != sheet {
			continue
		}
		ref := d.RefersTo[strings.LastIndex(d.RefersTo, "!")+1:]
		ref = strings.ReplaceAll(ref[strings.Index(ref, ":")+1:], "$", "")
		if c, r, err := excelize.CellNameToCoordinates(ref); err == nil {
			return Area{c, r}
		}
	}
	return Area{math.MaxInt, math.MaxInt}
}

// PrintArea is the sheet's print area in the workbook at xlsx: how many
// columns and rows from A1 print, math.MaxInt for all.
func PrintArea(t testing.TB, xlsx, sheet string) (cols, rows int) {
	t.Helper()
	f, err := excelize.OpenFile(xlsx)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	a := printArea(f, sheet)
	return a.cols, a.rows
}

// repeatsFirstRow is whether the sheet's print titles repeat row 1.
func repeatsFirstRow(f *excelize.File, sheet string) bool {
	for _, d := range f.GetDefinedName() {
		if d.Name == "_xlnm.Print_Titles" && d.Scope == sheet && strings.Contains(d.RefersTo, "$1:$1") {
			return true
		}
	}
	return false
}

// headerOnEveryPage lists the pages of a sheet that repeats its header row
// and lack a word of it: a page of rows no header names.
func headerOnEveryPage(printed []Page, header []string) []string {
	if len(header) < 2 {
		return nil
	}
	var out []string
	for _, p := range printed {
		on := map[string]bool{}
		for _, w := range p.Words {
			on[w.Text] = true
		}
		for _, h := range header {
			for _, w := range strings.Fields(h) {
				if !on[w] {
					out = append(out, fmt.Sprintf("page %d (%s): %q of the header %q is not repeated on it", p.Number, p.Sheet, w, h))
				}
			}
		}
	}
	return out
}

// brokenAtHyphens is whether w is printed in parts broken after its
// hyphens, as a wrapped cell breaks "sign-off" over two lines.
func brokenAtHyphens(w string, printed map[string]bool) bool {
	parts := strings.SplitAfter(w, "-")
	if len(parts) < 2 {
		return false
	}
	// Any run of parts may stay together on a line; each part must be on
	// the page within one of the printed words.
	for i := 0; i < len(parts); {
		j := len(parts)
		for ; j > i && !printed[strings.Join(parts[i:j], "")]; j-- {
		}
		if j == i {
			return false
		}
		i = j
	}
	return true
}

// repeatedColumn finds text cut off in the first column of a sheet printed
// across pages: each page of a band of rows repeats that column, and
// LibreOffice cuts what runs past it on all but the first page. Words that
// start in the column (left of the second column's header, secondHeader)
// must be the same on every page of a band. (Where LibreOffice clips with
// a clip path instead, the PDF still holds the whole text and pdftotext
// reads it whole: that cut is seen only in the rendered page.)
func repeatedColumn(printed []Page, secondHeader string) []string {
	across := len(FirstBand(printed))
	if across < 2 || secondHeader == "" {
		return nil
	}
	firstWord := strings.Fields(secondHeader)[0]
	right := -1.0
	top := printed[0].Height
	for _, w := range printed[0].Words {
		if w.Text == firstWord && w.YMin < top {
			right, top = w.XMin, w.YMin
		}
	}
	if right < 0 {
		return nil // the header check reports it
	}
	left := func(p Page) []string {
		var s []string
		for _, w := range p.Words {
			if w.XMin < right-1 && w.YMax < p.Height*0.9 { // not the footer
				s = append(s, w.Text)
			}
		}
		sort.Strings(s)
		return s
	}
	var out []string
	for b := 0; b+across <= len(printed); b += across {
		want := left(printed[b])
		for _, p := range printed[b+1 : b+across] {
			if got := left(p); strings.Join(got, " ") != strings.Join(want, " ") {
				out = append(out, fmt.Sprintf("page %d (%s): its repeated first column prints %.120q, page %d %.120q: cut off",
					p.Number, p.Sheet, strings.Join(got, " "), printed[b].Number, strings.Join(want, " ")))
			}
		}
	}
	return out
}
