package reports

import (
	"regexp"

	"github.com/xuri/excelize/v2"
)

// Number formats. Cells keep full precision; formats round only what is
// shown.
const (
	fmtInt      = "#,##0"
	fmtQuantity = "#,##0.00####"
	fmtPercent  = "0.00%"
	fmtDate     = "yyyy-mm-dd"
	fmtDateTime = "yyyy-mm-dd hh:mm:ss"
	fmtHour     = "yyyy-mm-dd hh:mm"
	fmtMoney    = "#,##0.00"
	fmtPrice    = "#,##0.00####"
)

// plainCurrency is a currency code that can go inside a quoted literal of a
// number format. Anything else is shown without a code in the format (the
// row's Currency column still says it).
var plainCurrency = regexp.MustCompile(`^[A-Za-z0-9]{1,12}$`)

// styles holds the workbook's cell styles, created once; money and price
// styles are created per currency as currencies appear.
type styles struct {
	f *excelize.File

	title, section, header, label, text, wrap int
	sectionWrap                               int // a section title in column A of a sheet that prints across pages
	notPriced                                 int // "not priced" where an amount would be, aligned as one
	integer, quantity, percent                int
	date, dateTime, hour                      int

	money         map[string]int
	moneyDecimals map[int]map[string]int // amounts shown with more decimals, to foot
	price         map[string]int
}

func newStyles(f *excelize.File) (*styles, error) {
	s := &styles{f: f, money: map[string]int{}, price: map[string]int{}}
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
	s.notPriced = mk(&excelize.Style{Alignment: &excelize.Alignment{Horizontal: "right", Vertical: "top"}})
	s.wrap = mk(&excelize.Style{Alignment: &excelize.Alignment{WrapText: true, Vertical: "top"}})
	s.integer = mk(num(fmtInt))
	s.quantity = mk(num(fmtQuantity))
	s.percent = mk(num(fmtPercent))
	s.date = mk(num(fmtDate))
	s.dateTime = mk(num(fmtDateTime))
	s.hour = mk(num(fmtHour))
	return s, err
}

// moneyStyle is the style of an amount in currency: two decimals shown,
// the currency code beside them.
func (s *styles) moneyStyle(currency string) (int, error) {
	return s.currencyStyle(s.money, fmtMoney, currency)
}

// moneyStyleDecimals is the style of an amount in currency shown with
// decimals decimals (2: moneyStyle).
func (s *styles) moneyStyleDecimals(currency string, decimals int) (int, error) {
	if decimals == 2 {
		return s.moneyStyle(currency)
	}
	if s.moneyDecimals == nil {
		s.moneyDecimals = map[int]map[string]int{}
	}
	if s.moneyDecimals[decimals] == nil {
		s.moneyDecimals[decimals] = map[string]int{}
	}
	return s.currencyStyle(s.moneyDecimals[decimals], moneyFormat(decimals), currency)
}

// priceStyle is the style of a unit price in currency: at least two and up
// to six decimals shown.
func (s *styles) priceStyle(currency string) (int, error) {
	return s.currencyStyle(s.price, fmtPrice, currency)
}

func (s *styles) currencyStyle(cache map[string]int, base, currency string) (int, error) {
	if id, ok := cache[currency]; ok {
		return id, nil
	}
	format := base
	if plainCurrency.MatchString(currency) {
		format = base + ` "` + currency + `"`
	}
	id, err := s.f.NewStyle(&excelize.Style{CustomNumFmt: &format, Alignment: &excelize.Alignment{Vertical: "top"}})
	if err != nil {
		return 0, err
	}
	cache[currency] = id
	return id, nil
}
