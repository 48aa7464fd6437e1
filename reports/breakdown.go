package reports

import (
	"database/sql"
)

// Payment categories of a usage row, as the queries name them.
const (
	catDirect  = "direct"
	catBalance = "balance"
	catLicense = "license"
	catOther   = "other"
)

// categoryLabel is how a category reads to finance.
func categoryLabel(c string) string {
	switch c {
	case catDirect:
		return "Billed directly"
	case catBalance:
		return "Drawn from a balance"
	case catLicense:
		return "Covered by a license"
	case catOther:
		return "Other entitlement type"
	}
	return c
}

const noneLabel = "(none)"

// orNone shows a missing name as "(none)" where a blank cell would read as
// an error.
func orNone(s sql.NullString) string {
	if !s.Valid {
		return noneLabel
	}
	return s.String
}

const emptyPeriod = "No usage rows for this month, basis and granularity."

// categorySplit is the four payment categories and their total, one
// currency.
type categorySplit struct {
	direct, balance, license, other, total money
}

func (c *categorySplit) dests() []any {
	return []any{&c.direct, &c.balance, &c.license, &c.other, &c.total}
}

// NotPriced is what an amount says that has no price: an estimate's usage
// of a meter no rate card price matches has no cost, which is not 0.
const NotPriced = "not priced"

// splitCells are a currency's four payment categories and their total,
// each shown in the currency's minor unit (moneyStyle). With no total,
// nothing was priced: an estimate whose meters no rate card price
// matches; every cell says so.
func (b *builder) splitCells(c categorySplit, currency string) ([]cell, error) {
	all := c.all()
	if !c.total.valid {
		out := make([]cell, len(all))
		for i := range out {
			out[i] = cell{NotPriced, b.st.notPriced}
		}
		return out, nil
	}
	var out []cell
	for _, m := range all {
		x, err := b.amount(m, currency)
		if err != nil {
			return nil, err
		}
		out = append(out, x)
	}
	return out, nil
}

func (c categorySplit) all() []money {
	return []money{c.direct, c.balance, c.license, c.other, c.total}
}

// split adds a line's split to its currency's total row, whose split
// starts at column first: a part no line has is blank, a total no line
// priced is "not priced", as on the lines.
func (l *footLine) split(first int, c categorySplit, currency string) {
	all := c.all()
	for i, m := range all[:4] {
		l.amount(first+i, currency, m)
	}
	l.value(first+4, currency, c.total)
}

// currencyLine is a table's total row of currency, which shows it in
// column currencyCol.
func (b *builder) currencyLine(f *foot, currency string, currencyCol int) *footLine {
	return f.line(currency, currency, map[int]cell{currencyCol: b.txt(currency)})
}

var splitColumns = []column{
	{"Billed directly", 16},
	{"Drawn from a balance", 16},
	{"Covered by a license", 16},
	{"Other entitlement types", 16},
	{"Total usage value", 18},
}

func (b *builder) byProject() error {
	if err := b.bySplit(sheetProject, "ByProject", "Project", "by_project"); err != nil {
		return err
	}
	return b.byProjectConverted()
}

// byOrganization is a group workbook's sheet: the month per organization
// and currency, split as By project.
func (b *builder) byOrganization() error {
	return b.bySplit(sheetOrg, "ByOrganization", "Organization", "by_organization")
}

// bySplit fills a sheet of one line per key and currency, the usage value
// split by how it is paid: query's rows are the key (NULL for none),
// currency, rows and the split.
func (b *builder) bySplit(sheet, table, key, query string) error {
	cols := append([]column{
		{key, 28},
		{"Currency", 10},
		{"Rows", 10},
	}, splitColumns...)
	t, err := b.newTable(sheet, table, 1, cols)
	if err != nil {
		return err
	}
	totals := b.newFoot(len(cols))
	err = b.each(query, func(r *sql.Rows) error {
		var (
			name     sql.NullString
			currency string
			rows     int64
			split    categorySplit
		)
		if err := r.Scan(append([]any{&name, &currency, &rows}, split.dests()...)...); err != nil {
			return err
		}
		cells, err := b.splitCells(split, currency)
		if err != nil {
			return err
		}
		l := b.currencyLine(totals, currency, 1)
		l.count(2, rows)
		l.split(3, split, currency)
		return t.add(append([]cell{b.txt(orNone(name)), b.txt(currency), b.count(rows)}, cells...)...)
	})
	if err != nil {
		return err
	}
	if err := t.finish(emptyPeriod); err != nil {
		return err
	}
	_, err = totals.write(t)
	return err
}

func (b *builder) byMeter() error {
	totals := b.newFoot(9)
	t, err := b.newTable(sheetMeter, "ByMeter", 1, []column{
		{"Family", 16},
		{"Solution", 18},
		{"Meter", 30},
		{"Meter SKU", 18},
		{"Currency", 10},
		{"Quantity", 16},
		{"Unit", 12},
		{"Rows", 10},
		{"Usage value", 18},
	})
	if err != nil {
		return err
	}
	err = b.each("by_meter", func(r *sql.Rows) error {
		var (
			family, solution, sku, unit sql.NullString
			meter, currency             string
			rows                        int64
			quantity                    sql.NullFloat64
			cost                        money
		)
		if err := r.Scan(&family, &solution, &meter, &sku, &unit, &currency, &rows, &quantity, &cost); err != nil {
			return err
		}
		c, err := b.value(cost, currency)
		if err != nil {
			return err
		}
		l := b.currencyLine(totals, currency, 4)
		l.count(7, rows)
		l.value(8, currency, cost)
		return t.add(b.nstr(family), b.nstr(solution), b.txt(meter), b.nstr(sku), b.txt(currency),
			b.qty(quantity), b.nstr(unit), b.count(rows), c)
	})
	if err != nil {
		return err
	}
	if err := t.finish(emptyPeriod); err != nil {
		return err
	}
	_, err = totals.write(t)
	return err
}

func (b *builder) byPaymentMethod() error {
	totals := b.newFoot(16)
	// The method, its currency and usage value and whether it may be
	// charged come first, one page wide on paper (printPlan prints the
	// leftmost columns that fit); the purchase references follow, read on
	// screen.
	t, err := b.newTable(sheetPayment, "ByPaymentMethod", 1, []column{
		{"Name", 22},
		{"Type", 14},
		{"Currency", 10},
		{"Rows", 8},
		{"Usage value", 16},
		{"Active", 8},
		{"Terms accepted", 10},
		{"Projects with usage", 28},
		{"Valid from (first day)", 12},
		{"Valid until (first invalid day)", 12},
		{"Payment method id", 38},
		{"Sales order number", 18},
		{"Marketplace ids", 40},
		{"Streaming billed monthly (autoPurchaseStreamLicenses)", 30}, // the name the interface gives it does not break
		{"Projects of the payment method", 28},
		{"Snapshot taken (UTC)", 20},
	})
	if err != nil {
		return err
	}
	err = b.each("by_payment_method", func(r *sql.Rows) error {
		var (
			id, name, typ, order, ids, projects, used sql.NullString
			from, until, snapshot                     sql.NullTime
			active, terms, autoStream                 sql.NullBool
			currency                                  string
			rows                                      int64
			cost                                      money
		)
		if err := r.Scan(&id, &name, &typ, &order, &ids, &from, &until, &active, &terms, &autoStream, &projects, &used,
			&snapshot, &currency, &rows, &cost); err != nil {
			return err
		}
		c, err := b.value(cost, currency)
		if err != nil {
			return err
		}
		l := b.currencyLine(totals, currency, 2)
		l.count(3, rows)
		l.value(4, currency, cost)
		flag := func(v sql.NullBool) cell {
			if !v.Valid {
				return cell{nil, b.st.text}
			}
			return cell{yesNo(v.Bool), b.st.yesNo}
		}
		return t.add(b.wrappedNull(name), b.nstr(typ), b.txt(currency), b.count(rows), c, flag(active), flag(terms),
			b.wrapped(used.String), b.day(from), b.day(until), b.txt(orNone(id)), b.nstr(order), b.wrapped(ids.String),
			flag(autoStream), b.wrapped(projects.String), b.stamp(snapshot))
	})
	if err != nil {
		return err
	}
	if err := t.finish(emptyPeriod); err != nil {
		return err
	}
	_, err = totals.write(t)
	return err
}

func yesNo(v bool) string {
	if v {
		return "Yes"
	}
	return "No"
}
