package reports

import (
	"regexp"
	"strings"

	"github.com/xuri/excelize/v2"
)

// Number formats. Cells keep full precision; formats round only what is
// shown.
const (
	fmtInt      = "#,##0"
	fmtQuantity = "#,##0.00####"
	fmtPercent  = "0.00%"
	fmtDate     = "yyyy-mm-dd"
	fmtMonth    = "yyyy-mm"
	fmtDateTime = "yyyy-mm-dd hh:mm:ss"
	fmtHour     = "yyyy-mm-dd hh:mm"
	fmtPrice    = "#,##0.00####"
)

// minorUnits are the decimals of the ISO 4217 currencies whose minor unit
// is not the cent; every other currency's amounts show two.
var minorUnits = map[string]int{
	"BIF": 0, "CLP": 0, "DJF": 0, "GNF": 0, "ISK": 0, "JPY": 0, "KMF": 0, "KRW": 0, "PYG": 0,
	"RWF": 0, "UGX": 0, "UYI": 0, "VND": 0, "VUV": 0, "XAF": 0, "XOF": 0, "XPF": 0,
	"BHD": 3, "IQD": 3, "JOD": 3, "KWD": 3, "LYD": 3, "OMR": 3, "TND": 3,
	"CLF": 4, "UYW": 4,
}

// minorUnit is how many decimals currency's amounts show.
func minorUnit(currency string) int {
	if d, ok := minorUnits[strings.ToUpper(currency)]; ok {
		return d
	}
	return 2
}

// moneyFormat is the number format of an amount shown with decimals
// decimals.
func moneyFormat(decimals int) string {
	if decimals <= 0 {
		return "#,##0"
	}
	return "#,##0." + strings.Repeat("0", decimals)
}

// plainCurrency is a currency code that can go inside a quoted literal of a
// number format. Anything else is shown without a code in the format (the
// row's Currency column still says it).
var plainCurrency = regexp.MustCompile(`^[A-Za-z0-9]{1,12}$`)

// styles holds the workbook's cell styles, created once; money and price
// styles are created per currency as currencies appear.
type styles struct {
	f *excelize.File

	title, section, header, label, text, wrap int
	// yesNo is a Yes or No, centred: printed beside a right-aligned
	// figure, it would read as the figure's word ("81.69 EUR Yes").
	yesNo int
	// reason is a wrapped sentence beside an amount, set in from its
	// left edge so the two never read as one ("5.38 USD rule …").
	reason                     int
	sectionWrap                int // a section title in column A of a sheet that prints across pages
	notPriced                  int // "not priced" where an amount would be, aligned as one
	integer, quantity, percent int
	date, dateTime, hour       int
	month                      int // a month, as its first day

	money      map[string]int
	moneyTotal map[string]int // an amount on a total row: bold
	price      map[string]int
	// A total row's cells: bold, a rule above.
	totalLabel, integerTotal, notPricedTotal int
}

func newStyles(f *excelize.File) (*styles, error) {
	s := &styles{f: f, money: map[string]int{}, moneyTotal: map[string]int{}, price: map[string]int{}}
	var err error
	mk := func(st *excelize.Style) int {
		if err != nil {
			return 0
		}
		var id int
		id, err = f.NewStyle(st)
		return id
	}
	num := func(format string) *excelize.Style {
		return &excelize.Style{CustomNumFmt: &format, Alignment: &excelize.Alignment{Vertical: "top"}}
	}
	s.title = mk(&excelize.Style{Font: &excelize.Font{Bold: true, Size: 14}})
	s.section = mk(&excelize.Style{Font: &excelize.Font{Bold: true, Size: 12}})
	s.sectionWrap = mk(&excelize.Style{Font: &excelize.Font{Bold: true, Size: 12}, Alignment: &excelize.Alignment{WrapText: true, Vertical: "top"}})
	s.header = mk(&excelize.Style{
		Font:      &excelize.Font{Bold: true},
		Fill:      excelize.Fill{Type: "pattern", Pattern: 1, Color: []string{"DDE4EE"}},
		Alignment: &excelize.Alignment{WrapText: true, Vertical: "top"},
		Border:    []excelize.Border{{Type: "bottom", Color: "8EA0B8", Style: 1}},
	})
	s.label = mk(&excelize.Style{Font: &excelize.Font{Bold: true}, Alignment: &excelize.Alignment{Vertical: "top"}})
	s.text = mk(&excelize.Style{Alignment: &excelize.Alignment{Vertical: "top"}})
	s.yesNo = mk(&excelize.Style{Alignment: &excelize.Alignment{Horizontal: "center", Vertical: "top"}})
	s.reason = mk(&excelize.Style{Alignment: &excelize.Alignment{WrapText: true, Vertical: "top", Horizontal: "left", Indent: 1}})
	totalRule := []excelize.Border{{Type: "top", Color: "8EA0B8", Style: 1}}
	s.totalLabel = mk(&excelize.Style{Font: &excelize.Font{Bold: true}, Alignment: &excelize.Alignment{Vertical: "top"}, Border: totalRule})
	s.notPricedTotal = mk(&excelize.Style{Font: &excelize.Font{Bold: true}, Alignment: &excelize.Alignment{Horizontal: "right", Vertical: "top"}, Border: totalRule})
	intFmt := fmtInt
	s.integerTotal = mk(&excelize.Style{CustomNumFmt: &intFmt, Font: &excelize.Font{Bold: true}, Alignment: &excelize.Alignment{Vertical: "top"}, Border: totalRule})
	s.notPriced = mk(&excelize.Style{Alignment: &excelize.Alignment{Horizontal: "right", Vertical: "top"}})
	s.wrap = mk(&excelize.Style{Alignment: &excelize.Alignment{WrapText: true, Vertical: "top"}})
	s.integer = mk(num(fmtInt))
	s.quantity = mk(num(fmtQuantity))
	s.percent = mk(num(fmtPercent))
	s.date = mk(num(fmtDate))
	month := fmtMonth
	s.month = mk(&excelize.Style{CustomNumFmt: &month, Alignment: &excelize.Alignment{Horizontal: "left", Vertical: "top"}})
	s.dateTime = mk(num(fmtDateTime))
	s.hour = mk(num(fmtHour))
	return s, err
}

// moneyStyle is the style of an amount in currency: the currency's minor
// unit of decimals shown (two but for the currencies of minorUnits), with
// thousands separators and the currency code beside them. The cell keeps
// the exact amount; only what is shown is rounded.
func (s *styles) moneyStyle(currency string) (int, error) {
	return s.currencyStyle(s.money, moneyFormat(minorUnit(currency)), currency, false)
}

// moneyTotalStyle is moneyStyle on a total row: bold.
func (s *styles) moneyTotalStyle(currency string) (int, error) {
	return s.currencyStyle(s.moneyTotal, moneyFormat(minorUnit(currency)), currency, true)
}

// priceStyle is the style of a unit price in currency: at least two and up
// to six decimals shown.
func (s *styles) priceStyle(currency string) (int, error) {
	return s.currencyStyle(s.price, fmtPrice, currency, false)
}

func (s *styles) currencyStyle(cache map[string]int, base, currency string, bold bool) (int, error) {
	if id, ok := cache[currency]; ok {
		return id, nil
	}
	format := base
	if plainCurrency.MatchString(currency) {
		format = base + ` "` + currency + `"`
	}
	st := &excelize.Style{CustomNumFmt: &format, Alignment: &excelize.Alignment{Vertical: "top"}}
	if bold {
		st.Font = &excelize.Font{Bold: true}
		st.Border = []excelize.Border{{Type: "top", Color: "8EA0B8", Style: 1}}
	}
	id, err := s.f.NewStyle(st)
	if err != nil {
		return 0, err
	}
	cache[currency] = id
	return id, nil
}
