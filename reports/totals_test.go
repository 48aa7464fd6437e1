package reports_test

import (
	"math/big"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/xuri/excelize/v2"

	"github.com/tally-dev/tally"
	"github.com/tally-dev/tally/reports"
)

// dataRows is a sheet's table as rows: the header and the rows above the
// first blank one, after which the total rows follow.
func dataRows(t *testing.T, f *excelize.File, sheet string) [][]string {
	t.Helper()
	all := rows(t, f, sheet)
	for i, r := range all {
		if i > 0 && len(r) == 0 {
			return all[:i]
		}
	}
	return all
}

// footRow is the 1-based row number of the row labelled label below a
// sheet's table (in column A, or a wider column where A holds a key of the
// rows), 0 when there is none.
func footRow(t *testing.T, f *excelize.File, sheet, label string) int {
	t.Helper()
	all := rows(t, f, sheet)
	for i := len(dataRows(t, f, sheet)); i < len(all); i++ {
		if slices.Contains(all[i], label) {
			return i + 1
		}
	}
	return 0
}

// cellFormat is the number format of a cell.
func cellFormat(t *testing.T, f *excelize.File, sheet string, col, row int) (string, bool) {
	t.Helper()
	ref, _ := excelize.CoordinatesToCellName(col, row)
	id, err := f.GetCellStyle(sheet, ref)
	if err != nil {
		t.Fatal(err)
	}
	st, err := f.GetStyle(id)
	if err != nil {
		t.Fatal(err)
	}
	bold := st.Font != nil && st.Font.Bold
	if st.CustomNumFmt == nil {
		return "", bold
	}
	return *st.CustomNumFmt, bold
}

// shownAs is what a cell shows, as a number: its value rounded half away
// from zero to the decimals of its number format (0 when blank).
func shownAs(t *testing.T, f *excelize.File, sheet string, col, row int) *big.Rat {
	t.Helper()
	ref, _ := excelize.CoordinatesToCellName(col, row)
	raw, err := f.GetCellValue(sheet, ref, excelize.Options{RawCellValue: true})
	if err != nil {
		t.Fatal(err)
	}
	if raw == "" {
		return new(big.Rat)
	}
	format, _ := cellFormat(t, f, sheet, col, row)
	number := strings.SplitN(format, " ", 2)[0]
	decimals := 0
	if i := strings.Index(number, "."); i >= 0 {
		decimals = len(number) - i - 1
	}
	v, ok := new(big.Rat).SetString(strconv.FormatFloat(mustFloat(t, raw), 'g', 15, 64))
	if !ok {
		t.Fatalf("%s!%s: %q", sheet, ref, raw)
	}
	scale := new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(decimals)), nil))
	x := new(big.Rat).Mul(v, scale)
	q, rem := new(big.Int).QuoRem(x.Num(), x.Denom(), new(big.Int))
	if new(big.Int).Mul(new(big.Int).Abs(rem), big.NewInt(2)).Cmp(x.Denom()) >= 0 {
		q.Add(q, big.NewInt(int64(x.Sign())))
	}
	return new(big.Rat).Quo(new(big.Rat).SetInt(q), scale)
}

// moneyFormat is the format an amount in currency shows with.
func moneyFormat(currency string) string {
	switch currency {
	case "JPY":
		return `#,##0 "JPY"`
	case "KWD":
		return `#,##0.000 "KWD"`
	}
	return `#,##0.00 "` + currency + `"`
}

// Every breakdown ends with a bold Total row per currency equal to the
// Summary's figure, exact in the cell; every amount shows the currency's
// minor unit with thousands separators; and the figures as shown, plus
// the Rounding row where there is one, add up to the Total as shown.
// CHF's two half cents show 0.01 each beside a total of 0.01: By project
// has a Rounding row of -0.01. JPY shows no decimals, KWD three.
func TestTotalsFootAsShown(t *testing.T) {
	db := openDB(t)
	seed(t, db)
	for _, u := range []use{
		{project: "delta", cost: "0.005", currency: "CHF", meter: "storage_gb", date: day(4)},
		{project: "epsilon", cost: "0.005", currency: "CHF", meter: "transcode_x", date: day(5)},
		{project: "zeta", cost: "1234.4", currency: "JPY", meter: "storage_gb", date: day(6)},
		{project: "zeta", cost: "10.4", currency: "JPY", meter: "storage_gb", date: day(7)},
		{project: "eta", cost: "12345.0004", currency: "KWD", meter: "storage_gb", date: day(8)},
	} {
		u.unit, u.qty, u.pm, u.pmName = "GB", 1, pm1, "Direct USD"
		addUsage(t, db, u)
	}
	// September was closed; late charges in two currencies since.
	execSQL(t, db, `INSERT INTO month_closes (id, month, basis, granularity, action, acted_at, who, rows, cost, content_hash, final_workbook)
		VALUES (uuid(), DATE '2026-09-01', 'usage', 'day', 'close', TIMESTAMP '2026-10-02 06:00:00', 'nightly',
		        1, MAP {'USD': 90.0::DECIMAL(38, 12)}, 'x', 'tally-cost-2026-09-final.xlsx')`)
	execSQL(t, db, `INSERT INTO month_close_figures (close_id, project, meter_name, payment_method, currency, rows, cost, billed, effective, quantity, unit) SELECT id, 'alpha', 'video_encoding_ondemand', ?, 'USD', 1, 90.004, 90.004, 90.004, 1, 'minutes'
		FROM month_closes`, pm1)
	addUsage(t, db, use{date: time.Date(2026, 9, 12, 0, 0, 0, 0, time.UTC), meter: "storage_gb", unit: "GB", qty: 1, cost: "2.005", currency: "USD", pm: pm1, project: "beta"})
	oct := time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC)
	alloc := &tally.Allocation{
		CostCentres: []tally.CostCentre{{Name: "Video", Projects: []string{"alpha", "delta"}}, {Name: "Storage"}},
		Rules:       []tally.AllocationRule{{Name: "beta", From: oct, Projects: []string{"beta"}, Receivers: []string{"Video", "Storage"}, Method: tally.AllocateEven}},
	}
	f, _ := build(t, db, reports.Options{Allocation: alloc})

	totals := summaryTable(t, f, "Currency")
	summary := map[string][]string{}
	for _, r := range totals[1:] {
		summary[r[0]] = r
	}
	currencies := []string{"CHF", "EUR", "JPY", "KWD", "USD"}
	if len(summary) != len(currencies) {
		t.Fatalf("Summary currencies %q", totals)
	}
	sql := map[string]string{}
	for _, c := range querySQL(t, db, `SELECT currency, CAST(sum(cost) AS VARCHAR) FROM usage WHERE `+monthFilter+` GROUP BY ALL`) {
		sql[c[0]] = c[1]
	}
	// Summary's Total usage value, exact.
	for _, c := range currencies {
		sameAmount(t, "Summary "+c, at(summary[c], colOf(t, totals[0], "Total usage value")), sql[c])
	}

	// foots checks col of sheet for currency: the Total row's cell equals
	// want exactly and is bold, the data rows' figures of the currency as
	// shown plus Rounding as shown add up to the Total as shown, and
	// every amount has the currency's format. currencyCol "": the column
	// is the currency's own (Daily).
	foots := func(sheet, currency, totalLabel, roundingLabel, colName, currencyCol, want string) {
		t.Helper()
		data := dataRows(t, f, sheet)
		col := colOf(t, data[0], colName)
		row := footRow(t, f, sheet, totalLabel)
		if row == 0 {
			t.Errorf("%s has no %q row", sheet, totalLabel)
			return
		}
		ref, _ := excelize.CoordinatesToCellName(col+1, row)
		raw, _ := f.GetCellValue(sheet, ref, excelize.Options{RawCellValue: true})
		if raw != want {
			t.Errorf("%s %s %s: total %s, Summary %s", sheet, totalLabel, colName, raw, want)
		}
		if format, bold := cellFormat(t, f, sheet, col+1, row); format != moneyFormat(currency) || !bold {
			t.Errorf("%s %s %s: format %q bold %v, want %q bold", sheet, totalLabel, colName, format, bold, moneyFormat(currency))
		}
		if _, bold := cellFormat(t, f, sheet, 1, row); !bold {
			t.Errorf("%s %s: label not bold", sheet, totalLabel)
		}
		sum := new(big.Rat)
		for i, r := range data[1:] {
			if currencyCol != "" && at(r, colOf(t, data[0], currencyCol)) != currency {
				continue
			}
			if format, _ := cellFormat(t, f, sheet, col+1, i+2); at(r, col) != "" && format != moneyFormat(currency) {
				t.Errorf("%s row %d %s: format %q, want %q", sheet, i+2, colName, format, moneyFormat(currency))
			}
			sum.Add(sum, shownAs(t, f, sheet, col+1, i+2))
		}
		if r := footRow(t, f, sheet, roundingLabel); r != 0 {
			sum.Add(sum, shownAs(t, f, sheet, col+1, r))
		}
		if total := shownAs(t, f, sheet, col+1, row); sum.Cmp(total) != 0 {
			t.Errorf("%s %s %s: figures as shown add up to %s, the total shows %s", sheet, totalLabel, colName, sum.FloatString(4), total.FloatString(4))
		}
	}
	split := []string{"Billed directly", "Drawn from a balance", "Covered by a license", "Other entitlement types", "Total usage value"}
	for _, c := range currencies {
		for _, n := range split {
			want := at(summary[c], colOf(t, totals[0], n))
			if want == "" {
				continue
			}
			foots("By project", c, "Total "+c, "Rounding "+c, n, "Currency", want)
		}
		want := at(summary[c], colOf(t, totals[0], "Total usage value"))
		foots("By meter", c, "Total "+c, "Rounding "+c, "Usage value", "Currency", want)
		foots("By payment method", c, "Total "+c, "Rounding "+c, "Usage value", "Currency", want)
		foots("Daily", c, "Total", "Rounding", c, "", want)
		foots("Chargeback", c, "Total "+c, "Rounding "+c, "Total", "Currency", want)
	}
	// CHF on By project: 0.01 + 0.01 shown, total 0.01, Rounding -0.01.
	bp := dataRows(t, f, "By project")
	r := footRow(t, f, "By project", "Rounding CHF")
	if r == 0 {
		t.Fatal("By project has no Rounding CHF row")
	}
	if got := shownAs(t, f, "By project", colOf(t, bp[0], "Total usage value")+1, r); got.Cmp(big.NewRat(-1, 100)) != 0 {
		t.Errorf("By project Rounding CHF %s, want -0.01", got.FloatString(2))
	}
	// Rows counted on the Total row are the Summary's.
	for _, c := range currencies {
		all := rows(t, f, "By project")
		if got, want := at(all[footRow(t, f, "By project", "Total "+c)-1], colOf(t, bp[0], "Rows")), at(summary[c], colOf(t, totals[0], "Rows")); got != want {
			t.Errorf("By project Total %s rows %s, Summary %s", c, got, want)
		}
	}
	// JPY shows no decimals, KWD three: as LibreOffice or Excel would
	// format them.
	for _, c := range []struct{ currency, shows string }{{"JPY", "1,245 JPY"}, {"KWD", "12,345.000 KWD"}, {"CHF", "0.01 CHF"}} {
		row := footRow(t, f, "By project", "Total "+c.currency)
		ref, _ := excelize.CoordinatesToCellName(colOf(t, bp[0], "Total usage value")+1, row)
		if got, _ := f.GetCellValue("By project", ref); got != c.shows {
			t.Errorf("By project Total %s shows %q, want %q", c.currency, got, c.shows)
		}
	}

	// Adjustments: a Total row per closed month and currency, equal to
	// the Summary's adjustment: 9.996 and 2.005 show 10.00 and 2.01
	// beside a total of 12.00, with a Rounding row of -0.01.
	adj := summaryTable(t, f, "Closed month")
	if len(adj) != 2 {
		t.Fatalf("Summary adjustments %q", adj)
	}
	foots("Adjustments to closed months", "USD", "Total USD", "Rounding USD", "Adjustment", "Currency", at(adj[1], 2))
	foots("Adjustments to closed months", "USD", "Total USD", "Rounding USD", "As closed", "Currency", "90.004")
	all := rows(t, f, "Adjustments to closed months")
	if r := footRow(t, f, "Adjustments to closed months", "Rounding USD"); r == 0 {
		t.Error("Adjustments has no Rounding USD row")
	} else if total := all[footRow(t, f, "Adjustments to closed months", "Total USD")-1]; at(total, 0) != "2026-09" {
		t.Errorf("Adjustments total row %q, want it for 2026-09", total)
	}

	// The totals are not data: the Excel tables end above them.
	for _, s := range []string{"By project", "By meter", "By payment method", "Daily", "Chargeback", "Adjustments to closed months"} {
		tables, err := f.GetTables(s)
		if err != nil || len(tables) != 1 {
			t.Fatalf("%s tables %v: %v", s, tables, err)
		}
		last := strings.Split(tables[0].Range, ":")[1]
		_, row, _ := excelize.CellNameToCoordinates(last)
		if want := len(dataRows(t, f, s)); row != want {
			t.Errorf("%s table %s ends on row %d, its data on %d", s, tables[0].Range, row, want)
		}
	}
}
