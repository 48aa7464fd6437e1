// Package closes owns the month close: tally close (Close, CheckClose, a
// close's refusals as *RefusedError), the close step (schedule.jobs[].run:
// close, registered here), the final workbooks and statements a close
// writes, staged and put in place so that a kill at any moment leaves the
// month untouched or closed (FinishCloses, which the deliver step also
// runs before it sends), and the order a close takes its records in. The
// records themselves (month_closes, month_close_figures,
// month_close_statements, month_close_keys) are read and written through
// store, which keeps them in the transaction that loads usage and re-keys
// the kept months; the final workbook and the adjustments sheet are
// reports'. It imports no runner: a close runs on the runner it is handed
// (Runner, which schedules.Runner is).
// The package is named closes, not close as the design has it: a package
// close would shadow Go's builtin close in every file that imports it.
package closes
