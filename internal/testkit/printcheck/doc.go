// Package printcheck proves that a workbook prints legibly: it has
// LibreOffice print the workbook to PDF, as a controller saves it for the
// month's binder, reads every word's box back with pdftotext -bbox-layout
// (poppler-utils), and finds words printed over other words, words printed
// too small to read, text cut off (a word of a cell printed nowhere), and
// sheets whose header does not reach their first pages. The workbook tests
// of reports and of the tally command use it.
//
// It lives under internal/testkit, the test-only helpers: only _test.go
// files import it, so it is compiled into test binaries and never into tally.
package printcheck
