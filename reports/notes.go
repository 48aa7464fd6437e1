package reports

import (
	"math"
	"strconv"

	"github.com/tally-dev/tally"
)

// notes fills the Notes sheet: what every sheet and column means, for a
// finance reader.
func (b *builder) notes() error {
	t, err := b.newTable(sheetNotes, "Notes", 1, []column{
		{"Sheet", 22},
		{"Column", 30},
		{"What it means", 90},
	})
	if err != nil {
		return err
	}
	notes := notesText(b.opts.Tolerance)
	if b.p.Basis == tally.BasisEstimated {
		notes = append([][3]string{
			{"All sheets", "Estimated", "These figures are " + EstimatedWarning + ". They are each project's own usage report (quantities only, read at every run; a day's quantity is the difference between two reads, a negative one a correction the provider made) multiplied by the rate card price in force for the project's payment method that month, matched as the rate card check matches. A meter no single price matches has no cost and is flagged. They differ from the organization's usage report where the provider bills differently from its rate card (the rate card check shows where), for entitlements (a license or a balance pays the usage: the estimate does not know), and for usage the provider had not yet metered at the last read. Months before Tally's first read of a project cannot be told."},
		}, notes...)
	}
	for _, n := range notes {
		if err := t.add(b.wrapped(n[0]), b.wrapped(n[1]), b.wrapped(n[2])); err != nil {
			return err
		}
	}
	return t.finish("")
}

func notesText(tolerance float64) [][3]string {
	tol := percent(tolerance)
	return [][3]string{
		{"All sheets", "", "Figures come from the usage the provider's management interface reported, as Tally loaded it. Amounts are exact in the cell, so a formula or a pivot over them gets the exact figure, and shown with thousands separators rounded (half away from zero) to the currency's minor unit: two decimals, none for JPY, KRW and the like, three for BHD, KWD and the like; unit prices and quantities show the decimals they have, two to six. Each figure is rounded on its own, so rounded figures need not add up to their rounded total by a cent or so: a row's payment split beside its total, and a column of figures above its Total row (where a Rounding row then shows the difference). A currency's amounts are never added to another currency's. An estimate's usage of a meter no rate card price matches has no value: it says not priced. Dates and times are UTC."},
		{"All sheets", "Usage value", "What the usage is worth at the provider's prices, whoever pays for it: billed directly, drawn from a prepaid balance, covered by a license or under another entitlement."},
		{"All sheets", "Billed directly", "Usage with no entitlement: the provider invoices it."},
		{"All sheets", "Drawn from a balance", "Usage paid from a cash, quantity or pre-commitment entitlement: it reduces a balance bought in advance rather than appearing as a new charge."},
		{"All sheets", "Covered by a license", "Usage covered in full by a license entitlement: nothing is billed for it."},
		{"All sheets", "Other entitlement types", "Usage under an entitlement type Tally does not know, or under an entitlement the provider sent with no type, shown by the name the provider sent and never guessed into another column. See Flags."},
		{"All sheets", "Total, Rounding", "By organization, By project, By meter, By payment method, Daily, Chargeback and Adjustments to closed months end, below a blank row and outside the table (so filters, pivots and sorting leave them out), with a bold Total row per currency (Adjustments: per closed month and currency; Daily: one row, each currency in its own column): the exact sum of the rows above in that currency, which is the Summary's figure. Where the rows' figures as shown do not add up to the total as shown, a Rounding row above the Total shows the difference, so the figures as shown plus Rounding add up to the Total as shown."},
		{"Summary", "", "The month, which usage it counts (basis), how fresh the data is, the usage value per currency split by how it is paid, the value per entitlement type, how many items are flagged, and where the row-level detail is. It opens with the month's story: the month at a glance, the charts, the largest movers, the budgets' standing."},
		{"Summary", "The month at a glance", "Per currency, never added across currencies: the month's usage value, the previous month's, the change in the currency and as a percentage of the previous month, the same month a year ago and the change on it (Change % y/y), on the workbook's basis and granularity, from the rows loaded now. A month never loaded (no usage row and no fetch window of that basis and granularity) says not loaded, never 0; a month partly loaded says which days its fetch windows cover. new: nothing the month compared with. Each month's line under the table says what its figures stand on."},
		{"Summary", "Usage value by month, Usage value by project (charts)", "Per currency of the month, a line chart of the 13 months ending with it (a month not loaded is a gap) and a bar chart of its largest projects, both drawn from the tables further down the Summary: the last 13 months, and each currency's five largest projects and the rest together, which add up to the currency's month."},
		{"Summary", "Largest movers", "Per currency, the five project and meter pairs whose usage value changed most from the previous month, by the size of the change: both months' value, the change and the change as a percentage (new: nothing the month before). None when the previous month was not loaded."},
		{"Summary", "Budgets", "Each configured budget's amount, actual and month-end forecast as the Budgets and forecast sheet shows them (basis usage), and its standing: over once the actual passes the amount, at risk when the forecast does, on track otherwise."},
		{"Summary", "Basis", "usage: usage that happened in the month. reported: usage the provider charged in the month (its processing date), which is what invoices count; it can include usage from earlier months."},
		{"Summary", "Granularity", "The time bucket the provider reported usage in (hour, day, week, month or year). Each bucket is one row per meter, project and payment method."},
		{"Summary", "Month status", "Month to date while the month is under way (figures will still grow); over, not closed once its last day is past (late charges may still change it); closed once tally close froze it, with when, by whom and why, and the name of the final workbook in force. A month reopened (tally close --reopen) says so until it is closed again."},
		{"Summary", "Closed at, Closed by, Close reason, Close fingerprint", "The close stamp of a closed month: when and by whom it was closed, why, how many usage rows it held and a sha256 over them (month_closes.content_hash), which changes if and only if what the provider reported for the month changed."},
		{"Summary", "Final workbook (current)", "The final workbook the close wrote (tally-cost-YYYY-MM-final.xlsx; a month closed again after a reopen gets …-final-2.xlsx and so on). Only the latest is current; earlier finals are kept as they were sent, never rewritten."},
		{"Summary", "Data freshness", "The most recently loaded window of usage that overlaps the month and when it was fetched, how many windows cover the month, the oldest fetch among them, and the last run Tally recorded. Late charges arrive for days after usage; an old fetch can miss them."},
		{"Summary", "Organization, Organizations", "The organization whose usage the workbook holds (tally report --org), or, in a group's workbook, that it holds every organization's."},
		{"Summary, By project", "In the reporting currency", "Shown when reports.reporting_currency is set: each currency's total for the month converted into it at the month's rate from reports.fx_rates or reports.fx_rates_file (Rate source says which: the config, or the file and its line), exactly, and their sum, beside the figures per currency, which stay as they are. A currency without a rate for the month says no rate for that currency and month, and no total is made from the others: a rate is never guessed."},
		{"By organization", "", "In a group's workbook: usage value per organization and currency, split by how it is paid. Each line equals that organization's own workbook. Projects elsewhere in this workbook are named organization/project."},
		{"By project", "", "Usage value per project and currency, split by how it is paid. Quantities are not shown: different meters' units do not add up."},
		{"By project", "Rows", "How many usage rows (one per meter and time bucket) make up the line."},
		{"By meter", "", "How much of each meter was used and what it is worth, per currency."},
		{"By meter", "Quantity, Unit", "The amount used, in the unit beside it (for example minutes or gigabytes)."},
		{"By payment method", "", "Usage value per payment method and currency, with the method as it stood that month (its latest snapshot taken before the month ended, or the earliest one if Tally started recording later)."},
		{"By payment method", "Sales order number, Marketplace ids", "The purchase reference: the sales order for a direct method, the marketplace account, offer, subscription or customer ids for a marketplace method."},
		{"By payment method", "Valid from, Valid until", "The first day the method may be charged and the first day it may no longer be (blank: no limit). Usage whose time bucket lies wholly outside these days is flagged as a violation; a bucket (a week, month or year) that straddles either day is flagged as not decidable at this granularity, never counted as a violation nor as fine."},
		{"By payment method", "Active, Terms accepted", "The method's status as the provider reports it (isActive, termsAndConditionsAccepted). Usage charged to a method that is inactive or whose terms are not accepted is flagged."},
		{"By payment method", "Streaming billed monthly (autoPurchaseStreamLicenses)", "Yes: the provider bills this method's streaming usage through monthly charges rather than by the minute. The provider does not say more, so the usage value is shown as sent; streaming usage on such a method is listed on Flags to check against the invoice's monthly charges."},
		{"By payment method", "Projects of the payment method", "The projects the provider lists as billed to the method; Projects with usage are those that used it this month."},
		{"Rate card check", "", "Whether each meter was valued at the price on the payment method's rate card in force that month: one line per meter, payment method and currency."},
		{"Rate card check", "Usage value, Invoiced", "What the meter's usage is worth at the provider's prices, and the part of it that is invoiced (billed directly, or under an entitlement type Tally does not know); the rest is drawn from a prepaid balance or covered by a license."},
		{"Rate card check", "Unit price", "Usage value divided by quantity."},
		{"Rate card check", "Rate card price, Rate card unit", "The base price per unit on the rate card (location-specific prices are not compared)."},
		{"Rate card check", "Matched by", "How the meter was found on the rate card: sku (the meter's SKU equals the price's SKU), meter name in parentheses (the price name ends with the meter name in parentheses, as in advanced_sd(video_encoding_ondemand)), or name (the price name equals the meter name)."},
		{"Rate card check", "Expected cost", "Quantity × rate card price, computed exactly."},
		{"Rate card check", "Variance, Variance %", "Usage value − expected cost, and that as a share of the expected cost. Positive: valued more than the rate card says. Only the invoiced part of a variance is a matter for a billing query."},
		{"Rate card check", "Flagged, Status", "ok: within " + tol + " of the expected cost (the tolerance set in reports.tolerance). variance: further off than " + tol + ". no price: no price on the rate card matches the meter (the line is kept, never dropped). several prices: more than one different price matches. currency differs: the rate card is in another currency."},
		{"Commitments", "", "Shown when commitments are configured (commitments:): per commitment, what was bought under an entitlement (Committed: an amount in a currency for a spend commitment, a quantity in a unit for a usage one), what its usage drew from it this month and to date (from its first day through this month's end, as loaded), what remains, and the day it runs out at this month's pace. Spend commitments end with a Total row per currency; usage ones, each in a unit of its own, do not."},
		{"Commitments", "Drawn this month, Drawn to date", "The cost (spend) or quantity (usage) of the usage rows of its entitlement in its currency or unit, at this workbook's basis and granularity, within its period: the figure FOCUS 1.3's Contract Commitment gives as applied. Rows of the entitlement in another currency or unit, or of an unknown entitlement type, are not added; How it is measured counts them."},
		{"Commitments", "Runs out at the month's pace", "The day what remains is used up if usage goes on at this month's pace (what the month drew over its days within the commitment, through its last day holding usage). Lasts past its end: that day is after its last day, or the month drew nothing. Used up: drawn to date reaches what was committed. Starts, ended: the month is outside its period. One that runs out, or is used up, before its end is on Flags."},
		{"Flags", "", "Everything that needs a person to look at it before sign-off, one line per group, with what to do: usage charged to a payment method outside its validity or straddling its start or end date, usage charged to a method that is inactive, without accepted terms or whose end date is not after its start date, streaming usage on a method billed monthly for streaming, unknown entitlement types, usage not yet charged in a closed month, the rate card lines that are not ok, and commitments that run out before their end."},
		{"Flags", "First day, Last day", "The first and last usage day of the group."},
		{"Flags", "Amount", "What is at stake: for a rate card variance the variance itself, not the meter's whole value; for a spend commitment running out, what remains of it; for the other kinds the usage value of the rows flagged. A billing query is advised only where part of it is invoiced."},
		{"Daily", "", "Usage value per day, one column per currency (0 where a currency had no usage that day), with a chart per currency. For basis reported the day is the day of charge."},
		{"Summary", "Adjustments to closed months", "Shown when a closed month's figures today differ from its figures at close (tally close): late charges the provider sent after the close, per closed month and currency. The closed month's final workbook (tally-cost-YYYY-MM-final.xlsx) never changes; the adjustment appears in every workbook written while the difference is not zero, whichever month it reports, and in FOCUS as Correction rows in the month Tally loaded the late charges."},
		{"Adjustments to closed months", "", "One line per closed month, project, meter, payment method and currency whose usage value today differs from the value at close. As closed: the value in the final workbook. Today: the value in the store now. Adjustment: today − as closed; positive means more was charged after the close."},
		{"Chargeback", "", "Shown when cost centres are configured (allocation): the month's usage value charged back to the cost centres, per cost centre and currency. A charge goes whole to the cost centre owning its project (Direct), or, when a rule in force shares it, in parts to the rule's cost centres (Shared received); a charge nobody owns and no rule shares is Unallocated. The cost centres and Unallocated add up to the month's total in each currency: the tie-out lines show it, and a difference other than 0 would be an error."},
		{"Chargeback", "Shared received by (rule, method)", "The rules whose shared charges the cost centre received, each as rule@first month, and how they were split: even (equal parts), fixed (agreed percentages), proportional (to each receiver's own direct usage value in the month and currency) or driver (to each receiver's quantity of a named meter in the month). A method that could not apply falls back (driver to proportional, proportional to even) and is listed under Fell back."},
		{"Chargeback", "Billed", "Of the total, the part billed directly or under an entitlement type Tally does not know; the rest is drawn from a balance or covered by a license. Every shared part keeps how its charge is paid."},
		{"Chargeback lines", "", "Every part of a shared charge a cost centre received: the rule, the method applied, the ratio (the receiver's weight over all the receivers') and the amount. A charge's parts add up to it exactly: each part is rounded down to 10^-12 and what rounding leaves goes to the largest part. The cost centres' statements (tally report --chargeback) show the same lines, one cost centre each."},
		{"Detail", "", "Every usage row of the month, as loaded. Past the sheet's row limit the rows continue on Detail 2, Detail 3 and so on; the Summary says how many sheets there are."},
		{"Detail", "Date, Date processed", "When the usage happened (start of its time bucket) and when the provider charged it; blank when not charged yet."},
		{"Detail", "Unit price (as sent)", "The price per unit the provider sent with the row (cost ÷ quantity)."},
		{"Detail", "Paid as", "How the row's cost is paid, from its entitlement type: Billed directly, Drawn from a balance, Covered by a license or Other entitlement type."},
		{"Detail", "Run id, Fetched at", "Which Tally run loaded the row and when it was fetched from the provider."},
	}
}

func percent(f float64) string {
	return formatFloat(f*100) + "%"
}

// formatFloat writes v without float noise (0.005 × 100 is 0.5, not
// 0.5000000000000001).
func formatFloat(v float64) string {
	return strconv.FormatFloat(math.Round(v*1e9)/1e9, 'f', -1, 64)
}
