package reports

import (
	"database/sql"
	"fmt"
	"strconv"
)

// flagKind is one kind of item the Flags sheet lists.
type flagKind string

// Flag kinds. The first six come from flags.sql, then the rate card
// check's, and last the Commitments sheet's.
const (
	flagOutsideValidity    flagKind = "outside_validity"
	flagValidityUnknown    flagKind = "validity_unknown"
	flagMethodState        flagKind = "method_state"
	flagStreamLicenses     flagKind = "stream_licenses"
	flagUnknownEntitlement flagKind = "unknown_entitlement"
	flagNotCharged         flagKind = "not_charged"
	flagEstimateCorrection flagKind = "estimate_correction"
	flagRateVariance       flagKind = "rate_card_variance"
	flagNoPrice            flagKind = "no_price"
	flagSeveralPrices      flagKind = "several_prices"
	flagCurrencyDiffers    flagKind = "currency_differs"
	flagCommitmentRunsOut  flagKind = "commitment_runs_out"
)

// flagKinds lists every kind in the order the Summary counts them.
var flagKinds = []flagKind{
	flagOutsideValidity, flagValidityUnknown, flagMethodState, flagStreamLicenses,
	flagUnknownEntitlement, flagNotCharged, flagEstimateCorrection,
	flagRateVariance, flagNoPrice, flagSeveralPrices, flagCurrencyDiffers,
	flagCommitmentRunsOut,
}

// label is the kind as finance reads it.
func (k flagKind) label() string {
	switch k {
	case flagOutsideValidity:
		return "Payment method outside its validity"
	case flagValidityUnknown:
		return "Validity cannot be told at this granularity"
	case flagMethodState:
		return "Payment method not in a billable state"
	case flagStreamLicenses:
		return "Streaming billed through monthly charges"
	case flagUnknownEntitlement:
		return "Unknown entitlement type"
	case flagNotCharged:
		return "Not yet charged"
	case flagEstimateCorrection:
		return "Correction in a project's report"
	case flagRateVariance:
		return "Rate card variance"
	case flagNoPrice:
		return "No rate card price"
	case flagSeveralPrices:
		return "Several rate card prices"
	case flagCurrencyDiffers:
		return "Rate card in another currency"
	case flagCommitmentRunsOut:
		return "Commitment runs out before its end"
	}
	return string(k)
}

// action says what to do about an item of the kind.
func (k flagKind) action() string {
	switch k {
	case flagOutsideValidity:
		return "Ask the provider why this usage was charged to a payment method that was not valid on those days; have it moved to the method in force, or get the validity extended in writing."
	case flagValidityUnknown:
		return "Not counted as a violation nor as fine. Fetch this month at hour or day granularity (usage.granularity) and rebuild the workbook to tell which part fell inside the validity."
	case flagMethodState:
		return "Ask the provider why usage was charged to this payment method in this state (see Detail); have it moved to a valid, active method with accepted terms."
	case flagStreamLicenses:
		return "The payment method has autoPurchaseStreamLicenses true: streaming is billed through monthly charges, not by the minute. Check the invoice's monthly streaming charges against this usage; the amounts here are the usage as sent."
	case flagUnknownEntitlement:
		return "Ask the provider how this entitlement type is paid before signing off; its cost is shown apart under Other entitlement types, not as billed, balance or license."
	case flagNotCharged:
		return "The month is over but these rows have no processing date: charges may still arrive. Fetch again (tally fetch) and rebuild this workbook before sign-off, or accrue the amount."
	case flagEstimateCorrection:
		return "The project's usage report said less than at the read before: the provider corrected it. The negative quantity is kept on its day so the month adds up; check the days around it before sign-off."
	case flagRateVariance:
		return "Compare with the invoice line. If the rate card price is right, raise a billing query with the provider quoting the meter, payment method and month."
	case flagNoPrice:
		return "Check the meter against the payment method's rate card (new meter, renamed SKU, or a card not fetched yet) and confirm its price with the provider."
	case flagSeveralPrices:
		return "Decide which rate card price applies to this meter and confirm it with the provider; the check cannot pick one."
	case flagCurrencyDiffers:
		return "Confirm with the provider which currency this payment method is billed in."
	case flagCommitmentRunsOut:
		return "At this pace the commitment will not last its term. Decide with the usage's owners whether to slow the usage or buy more, and check the contract for what usage after it runs out is billed at."
	}
	return ""
}

// flagRow is one row of the Flags sheet.
type flagRow struct {
	kind          flagKind
	subject, name sql.NullString
	currency      string
	first, last   sql.NullTime
	rows          int64
	cost          money // the amount at stake: see the Notes sheet's Flags · Amount
	detail        string
	action        string // what to do, when it depends on the row; else the kind's
}

// rateCardFlag is a rate card row that needs a look. A variance's amount is
// the variance itself, what is at stake, not the meter's whole value; and
// a billing query is advised only when part of the value is invoiced.
func rateCardFlag(status, meter string, sku, pm, pmName sql.NullString, currency string, rows int64,
	value, variance, invoiced, fromBalance money, pct sql.NullFloat64, why string) flagRow {
	kind := map[string]flagKind{
		rcVariance:        flagRateVariance,
		rcNoPrice:         flagNoPrice,
		rcSeveralPrices:   flagSeveralPrices,
		rcCurrencyDiffers: flagCurrencyDiffers,
	}[status]
	subject := meter
	if sku.Valid {
		subject += " (SKU " + sku.String + ")"
	}
	detail := fmt.Sprintf("Payment method %s. %s", orNone(pm), why)
	amount, action := value, ""
	if kind == flagRateVariance && variance.valid {
		amount = variance
		detail = fmt.Sprintf("Payment method %s: usage valued %s %s more than quantity × rate card price", orNone(pm), variance.cents(), currency)
		if pct.Valid {
			detail += " (" + strconv.FormatFloat(pct.Float64*100, 'f', 2, 64) + "%)"
		}
		detail += "; a negative amount means valued less. " + fmt.Sprintf("Of its usage value %s %s, %s is invoiced and %s drawn from a prepaid balance; the rest is covered by a license.",
			value.cents(), currency, invoiced.cents(), fromBalance.cents())
		switch {
		case !invoiced.isZero():
			action = "Compare with the invoice line. If the rate card price is right, raise a billing query with the provider quoting the meter, payment method and month."
		case !fromBalance.isZero():
			action = "Nothing of it is invoiced: it is drawn from a prepaid balance. If the rate card price is right, ask the provider to correct the amount drawn."
		default:
			action = "Nothing of it is invoiced or drawn from a balance: a license covers it. No billing query is needed; check the rate card only if the license's value matters."
		}
	}
	return flagRow{
		kind:     kind,
		subject:  sql.NullString{String: subject, Valid: true},
		name:     pmName,
		currency: currency,
		rows:     rows,
		cost:     amount,
		detail:   detail,
		action:   action,
	}
}

// flags fills the Flags sheet: flags.sql's groups, then the rate card rows
// that need a look.
func (b *builder) flags() error {
	t, err := b.newTable(sheetFlags, "Flags", 1, []column{
		{"Kind", 26},
		{"Subject", 34},
		{"Name", 22},
		{"Currency", 10},
		{"First day", 12},
		{"Last day", 12},
		{"Rows", 8},
		{"Amount", 16},
		// Wide: read on screen, as the page is full before them, and
		// wrapped narrower they would make each printed row taller.
		{"Detail", 80},
		{"What to do", 80},
	})
	if err != nil {
		return err
	}
	var found []flagRow
	err = b.each("flags", func(r *sql.Rows) error {
		var (
			kind, currency        string
			subject, name, side   sql.NullString
			validFrom, validUntil sql.NullTime
			f                     flagRow
		)
		if err := r.Scan(&kind, &subject, &name, &side, &validFrom, &validUntil, &currency,
			&f.first, &f.last, &f.rows, &f.cost); err != nil {
			return err
		}
		f.kind, f.subject, f.name, f.currency = flagKind(kind), subject, name, currency
		switch f.kind {
		case flagOutsideValidity:
			when := "on or after the first day it was no longer valid"
			if side.String == "before start" {
				when = "before its first valid day"
			}
			f.detail = fmt.Sprintf("Usage dated %s. The payment method is valid from %s until %s (first invalid day).",
				when, dateOr(validFrom, "no start"), dateOr(validUntil, "no end"))
		case flagValidityUnknown:
			f.detail = fmt.Sprintf("Usage buckets of this granularity (%s) straddle the payment method's start or end date. The method is valid from %s until %s (first invalid day).",
				b.p.Granularity, dateOr(validFrom, "no start"), dateOr(validUntil, "no end"))
		case flagMethodState:
			switch side.String {
			case "end not after start":
				f.detail = fmt.Sprintf("The payment method's end date %s is not after its start date %s: it is never valid.",
					dateOr(validUntil, "no end"), dateOr(validFrom, "no start"))
			case "inactive":
				f.detail = "The payment method is inactive (status.isActive false)."
			case "terms not accepted":
				f.detail = "The payment method's terms and conditions are not accepted (status.termsAndConditionsAccepted false)."
			default:
				f.detail = side.String
			}
		case flagStreamLicenses:
			f.detail = "Streaming usage charged to a payment method with autoPurchaseStreamLicenses true."
		case flagUnknownEntitlement:
			if subject.Valid {
				f.detail = fmt.Sprintf("Entitlement type %q is not license, cash, quantity or pre-commitment.", subject.String)
			} else {
				f.subject = sql.NullString{String: "(no type)", Valid: true}
				f.detail = "These rows name an entitlement but no entitlement type, so how they are paid is unknown."
			}
		case flagNotCharged:
			f.subject.String = "Project " + orNone(subject)
			f.subject.Valid = true
			f.detail = "These usage rows have no processing date (dateProcessed is null) although the month is closed."
		case flagEstimateCorrection:
			f.subject.String = "Project " + orNone(subject)
			f.subject.Valid = true
			f.detail = "Estimated days with a negative quantity: a read of the project's usage report gave less than the read before it."
		}
		found = append(found, f)
		return nil
	})
	if err != nil {
		return err
	}
	for _, f := range append(append(found, b.rateFlags...), b.commitmentFlags...) {
		cost, err := b.amount(f.cost, f.currency)
		if err != nil {
			return err
		}
		action := f.action
		if action == "" {
			action = f.kind.action()
		}
		if err := t.add(b.wrapped(f.kind.label()), b.wrappedNull(f.subject), b.wrappedNull(f.name), b.txt(f.currency),
			b.day(f.first), b.day(f.last), b.count(f.rows), cost, b.wrapped(f.detail), b.wrapped(action)); err != nil {
			return err
		}
		b.flagCounts[f.kind]++
	}
	if err := t.finish("Nothing flagged for this month."); err != nil {
		return err
	}
	return b.anomalies(max(t.row, t.first+3) + 3)
}

func dateOr(t sql.NullTime, none string) string {
	if !t.Valid {
		return none
	}
	return t.Time.Format("2006-01-02")
}
