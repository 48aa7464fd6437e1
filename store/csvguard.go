package store

import "strings"

// csvFormulaLeads are the first characters that make a spreadsheet
// (Excel, LibreOffice, Google Sheets) take a CSV cell for a formula, as
// the OWASP rule on CSV injection lists them: =, +, -, @, tab and carriage
// return. Project and payment method names come from the interface, where
// any project member sets them, so a name such as "=HYPERLINK(…)" would
// otherwise run in a finance team's spreadsheet.
const csvFormulaLeads = "=+-@\t\r"

// CSVGuard is the text s as a CSV cell a spreadsheet shows as text: with a
// single quote ahead when s begins with a formula's lead (the OWASP
// rule), else s as it is. It is for text only: a number (-5.00) is never
// guarded, so it stays a number.
func CSVGuard(s string) string {
	if s != "" && strings.IndexByte(csvFormulaLeads, s[0]) >= 0 {
		return "'" + s
	}
	return s
}
