package tally

// CloseFigure is a closed month's usage value for one organization,
// project, meter, payment method and currency as it stood at close: what
// the close's fingerprint reads (reports.MonthFingerprint) and its record
// keeps (month_close_figures). Amounts are exact decimal text.
type CloseFigure struct {
	Organization                                string
	Project, MeterName, PaymentMethod, Currency string
	Rows                                        int64
	Cost, Billed, Effective, Quantity           string
	Unit                                        string // "" when the interface sent none
}
