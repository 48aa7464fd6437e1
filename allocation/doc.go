// Package allocation owns chargeback: splitting a month's cost across
// cost centres by the config's allocation (cost centres owning projects,
// rules sharing charges by even, fixed, proportional or driver weights).
// Its records are its own: allocation_cost_centres and allocation_rules
// (migration 0012, kept with the store's numbered migrations), the open
// months' rows replaced from the config first in every run that writes
// (Set, which it registers with job.RegisterStart) and a close's frozen
// under its id (the store's close record calls store.FreezeAllocation,
// which this package sets). The split itself is the analysts' views
// allocation_charges and cost_allocation (sql/views, which export and the
// budgets' scopes read too); Lines reads a month's chargeback from them
// over the report month's rows (its SQL, sql/chargeback.sql), and Totals
// sums it per cost centre and currency. The workbook's Chargeback sheets
// and the statements are package reports', which reads these figures.
package allocation
