package reports

import (
	"database/sql"
	"fmt"
)

// Rate card check statuses, as rate_card_check.sql names them.
const (
	rcOK              = "ok"
	rcVariance        = "variance"
	rcNoPrice         = "no price"
	rcSeveralPrices   = "several prices"
	rcCurrencyDiffers = "currency differs"
)

func (b *builder) rateCardCheck() error {
	// What the check found comes first, one page wide on paper (printPlan
	// prints the leftmost columns that fit): the meter and payment method
	// the line is, its value, the expected cost, the variance and the
	// status. The workings (quantity, prices, how the price was matched)
	// and the references follow, read on screen.
	t, err := b.newTable(sheetRateCard, "RateCardCheck", 1, []column{
		{"Meter", 24},
		{"Payment method name", 18},
		{"Currency", 10},
		{"Usage value", 16},
		{"Invoiced", 16},
		{"Expected cost", 16},
		{"Variance", 16},
		{"Variance %", 11},
		{"Flagged", 9},
		{"Status", 16},
		{"Why", 50},
		{"Quantity", 16},
		{"Unit", 12},
		{"Rows", 8},
		{"Unit price", 16},
		{"Rate card price", 16},
		{"Rate card unit", 12},
		{"Rate card price name", 38},
		{"Matched by", 16},
		{"Rate card snapshot (UTC)", 20},
		{"Payment method id", 38},
		{"Meter SKU", 18},
		{"Family", 20}, // "Content Protection"
		{"Solution", 16},
	})
	if err != nil {
		return err
	}
	tol := percent(b.opts.Tolerance)
	err = b.each("rate_card_check", func(r *sql.Rows) error {
		var (
			meter, currency, status                       string
			sku, family, solution, pm, pmName, unit       sql.NullString
			priceUnit, priceName, matchedBy, cardCurrency sql.NullString
			rows                                          int64
			distinct                                      sql.NullInt64
			quantity, unitPrice, pct                      sql.NullFloat64
			value, price, expected, variance              money
			invoiced, fromBalance                         money
			snapshot                                      sql.NullTime
			hasCard                                       bool
		)
		if err := r.Scan(&meter, &sku, &family, &solution, &pm, &pmName, &currency, &rows, &quantity, &unit,
			&value, &unitPrice, &price, &priceUnit, &priceName, &matchedBy, &distinct, &cardCurrency,
			&snapshot, &hasCard, &expected, &variance, &pct, &status, &invoiced, &fromBalance); err != nil {
			return err
		}
		priceCurrency := currency
		if cardCurrency.Valid {
			priceCurrency = cardCurrency.String
		}
		why := rateCardWhy(status, pm.Valid, hasCard, distinct.Int64, matchedBy.String, cardCurrency.String, tol)
		valueCell, err := b.amount(value, currency)
		if err != nil {
			return err
		}
		invoicedCell, err := b.amount(invoiced, currency)
		if err != nil {
			return err
		}
		unitCell, err := b.unitPrice(unitPrice, currency)
		if err != nil {
			return err
		}
		priceCell, err := b.unitPrice(price, priceCurrency)
		if err != nil {
			return err
		}
		exp, err := b.amount(expected, currency)
		if err != nil {
			return err
		}
		vr, err := b.amount(variance, currency)
		if err != nil {
			return err
		}
		pc := cell{nil, b.st.percent}
		if pct.Valid {
			pc.v = pct.Float64
		}
		if err := t.add(b.wrapped(meter), b.wrappedNull(pmName), b.txt(currency),
			valueCell, invoicedCell, exp, vr, pc, cell{yesNo(status != rcOK), b.st.yesNo}, b.wrapped(status), b.wrapped(why),
			b.qty(quantity), b.nstr(unit), b.count(rows), unitCell, priceCell, b.nstr(priceUnit), b.wrappedNull(priceName),
			b.wrappedNull(matchedBy), b.stamp(snapshot), b.txt(orNone(pm)), b.nstr(sku), b.nstr(family), b.nstr(solution)); err != nil {
			return err
		}
		if status != rcOK {
			b.rateFlags = append(b.rateFlags, rateCardFlag(status, meter, sku, pm, pmName, currency, rows, value, variance, invoiced, fromBalance, pct, why))
		}
		return nil
	})
	if err != nil {
		return err
	}
	return t.finish(emptyPeriod)
}

// rateCardWhy explains a rate card check status in a sentence.
func rateCardWhy(status string, hasPM, hasCard bool, distinct int64, matchedBy, cardCurrency, tol string) string {
	switch status {
	case rcOK:
		if tol == "0%" {
			return "Usage value equals quantity × rate card price."
		}
		return "Usage value is within " + tol + " of quantity × rate card price."
	case rcVariance:
		if tol == "0%" {
			return "Usage value differs from quantity × rate card price."
		}
		return "Usage value differs from quantity × rate card price by more than " + tol + "."
	case rcNoPrice:
		switch {
		case !hasPM:
			return "The usage names no payment method, so there is no rate card to check against."
		case !hasCard:
			return "No rate card is stored for this payment method (fetch reference data, then rebuild)."
		}
		return "No base price on the payment method's rate card matches this meter by SKU, by the meter name in parentheses, or by name."
	case rcSeveralPrices:
		return fmt.Sprintf("%d different prices on the rate card match this meter by %s; none was picked.", distinct, matchedBy)
	case rcCurrencyDiffers:
		return "The rate card is in " + cardCurrency + ", the usage in another currency; no expected cost is computed."
	}
	return status
}
