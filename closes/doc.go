// Package closes owns the month close: tally close (Close, CheckClose, a
// close's refusals as *RefusedError), the close step (schedule.jobs[].run:
// close, registered here), the final workbooks and statements a close
// writes, staged and put in place so that a kill at any moment leaves the
// month untouched or closed (FinishCloses, which the deliver step also
// runs before it sends), and the order a close takes its checks and
// records in. It runs on the runner it is handed (Runner, which
// schedules.Runner is) and imports none.
//
// The records stay in store (month_closes, month_close_figures,
// month_close_statements, month_close_keys, store/closes.go): recording a
// close also freezes its chargeback rules in store's allocation tables and
// keeps the month's keys that every later load re-keys the closed month by
// (store/api_close.go), in one transaction with them, and store's own
// tests of loads and chargeback record closes. The final workbook's stamp
// and the adjustments sheet are reports'.
//
// The package is named closes, not close as the design has it: a package
// close would shadow Go's builtin close in every file that imports it.
package closes
