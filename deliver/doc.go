// Package deliver owns the deliver step (schedule.jobs[].run: deliver):
// each finished month's workbook, and the final workbook and statements of
// every close in force, sent once to the targets of reports.deliver, a
// shared folder (copied in whole) and a mail server (SMTP with STARTTLS or
// implicit TLS, every wait bounded). What was sent is recorded in the
// deliveries table before and after each send (this package reads and
// writes its rows; the table's migrations are in the store's numbered
// schema), so a run killed mid-send resends under the same Message-ID and
// nothing is sent twice. It imports no runner: the step registers itself
// with job.Register.
package deliver
