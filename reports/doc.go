// Package reports owns the finance workbook: one .xlsx per month that a
// finance team opens in Excel, LibreOffice or any viewer and signs costs off
// from.
//
// Build runs the queries embedded from sql/reports/ (one per sheet) against
// any Source (a *sql.DB on the store's DuckDB file) and writes the sheets:
// Summary, By project, By meter, By payment method, Rate card check,
// Commitments (with the config's commitments), Flags, Daily, Detail (streamed, continued on Detail 2, Detail 3… past the row
// limit) and Notes. WriteFile does the same into a file, atomically.
//
// Money never passes through a float on its way to a total: every amount is
// summed as DECIMAL in SQL, handed over as text (a breakdown's total rows
// add those exactly, foot.go), and only the finished value is converted to
// the nearest float64 for its cell (Excel holds only doubles); cells keep
// full precision and show the currency's minor unit. Totals are per
// currency, never across currencies. The package reads rows only through
// SQL and knows nothing of HTTP.
//
// It also owns writing a month's workbook from a config (Report, ReportOrg,
// Statements: what tally report and the jobs call; a month with no rows is
// an *EmptyMonthError, a refusal) and the report step (schedule.jobs[].run:
// report, WriteMonths), which registers itself with job.Register.
package reports
