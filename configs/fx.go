package configs

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/tally-dev/tally"
)

// FXRate is one month's rate of a currency into the reporting currency:
// how many units of it one unit of the currency is worth, exact, and where
// the config gives it.
type FXRate struct {
	Rate   tally.Decimal
	Source string // reports.fx_rates, or the CSV file and its line
}

// fxDecimals is the most decimal places of a rate: those of the store's
// amounts (DECIMAL(38, 12)).
const fxDecimals = 12

// fx reads reports.reporting_currency and its rates, from fx_rates or the
// CSV file fx_rates_file names (one, not both): rates[month YYYY-MM]
// [currency]. Every problem names its key; a rate is never guessed, so a
// month or currency without one is left out, for the workbook to say so.
func (p *parser) fx(r *rawReports, c *ReportsConfig) {
	c.ReportingCurrency = strings.TrimSpace(p.text(r.ReportingCurrency, ""))
	if c.ReportingCurrency != "" && !currencyRE.MatchString(c.ReportingCurrency) {
		p.bad(r.ReportingCurrency.key, "%q is not a currency code of three capital letters, e.g. EUR; the currency the Summary and By project add a converted total in", c.ReportingCurrency)
		c.ReportingCurrency = ""
	}
	file := p.text(r.FXRatesFile, "")
	switch {
	case r.FXRates.given() && file != "":
		p.addf(r.FXRatesFile.n, "reports.fx_rates and fx_rates_file", "set one, not both: a rate given twice could disagree")
		return
	case (r.FXRates.given() || file != "") && c.ReportingCurrency == "" && !r.ReportingCurrency.given():
		k := r.FXRates.key
		if file != "" {
			k = r.FXRatesFile.key
		}
		p.bad(k, "rates without reports.reporting_currency; set it to the currency they convert into, e.g. EUR")
		return
	}
	if file != "" {
		c.FXRatesPath = p.path(file)
		p.fxFile(r.FXRatesFile.key, c)
		return
	}
	p.fxMapping(r.FXRates, c)
}

// fxRate checks one rate of currency in month, from source, and adds it.
func (p *parser) fxRate(c *ReportsConfig, n *yaml.Node, where, monthText, currency, rateText, source string) {
	if _, err := time.Parse("2006-01", monthText); err != nil {
		p.addf(n, where, "%q is not a month as YYYY-MM, e.g. 2026-10", monthText)
		return
	}
	if !currencyRE.MatchString(currency) {
		p.addf(n, where, "%q is not a currency code of three capital letters, e.g. USD", currency)
		return
	}
	if currency == c.ReportingCurrency {
		p.addf(n, where, "%s is the reporting currency itself, which converts at 1; leave it out", currency)
		return
	}
	d, err := tally.ParseDecimal(strings.TrimSpace(rateText))
	if err != nil || d.Sign() <= 0 || d.Cmp(maxAmount) > 0 || !whole(d, fxDecimals) {
		p.addf(n, where, "%q is not a rate above 0 with at most %d decimal places: how many %s one %s is worth, e.g. 0.9215", rateText, fxDecimals, c.ReportingCurrency, currency)
		return
	}
	if c.FXRates == nil {
		c.FXRates = map[string]map[string]FXRate{}
	}
	m := c.FXRates[monthText]
	if m == nil {
		m = map[string]FXRate{}
		c.FXRates[monthText] = m
	}
	if _, dup := m[currency]; dup {
		p.addf(n, where, "a second rate for %s in %s; give each month and currency one", currency, monthText)
		return
	}
	m[currency] = FXRate{Rate: d, Source: source}
}

// fxMapping reads reports.fx_rates: month → currency → rate.
func (p *parser) fxMapping(m mapping, c *ReportsConfig) {
	n := m.n
	if isNull(n) {
		return
	}
	if n.Kind != yaml.MappingNode {
		p.addf(n, m.path, "must be a mapping of month (YYYY-MM) to currency and rate, e.g. {\"2026-10\": {USD: 0.9215}}, not %s", describe(n))
		return
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		mk, mv := deref(n.Content[i]), deref(n.Content[i+1])
		where := join(m.path, mk.Value)
		if mv == nil || mv.Kind != yaml.MappingNode {
			p.addf(mv, where, "must be a mapping of currency to rate, e.g. {USD: 0.9215}, not %s", describe(mv))
			continue
		}
		for j := 0; j+1 < len(mv.Content); j += 2 {
			ck, cv := deref(mv.Content[j]), deref(mv.Content[j+1])
			at := join(where, ck.Value)
			if cv == nil || cv.Kind != yaml.ScalarNode {
				p.addf(cv, at, "must be a rate, e.g. 0.9215, not %s", describe(cv))
				continue
			}
			p.fxRate(c, cv, at, mk.Value, ck.Value, cv.Value, "reports.fx_rates")
		}
	}
}

// fxFile reads the CSV reports.fx_rates_file names: a header month,
// currency, rate, then one rate a line.
func (p *parser) fxFile(k key, c *ReportsConfig) {
	f, err := os.Open(c.FXRatesPath)
	if err != nil {
		p.bad(k, "%v; give a CSV of month,currency,rate (a header line, then e.g. 2026-10,USD,0.9215)", err)
		return
	}
	defer f.Close()
	r := csv.NewReader(io.LimitReader(f, maxConfigSize))
	r.FieldsPerRecord = 3
	r.TrimLeadingSpace = true
	base := c.FXRatesPath
	for line := 1; ; line++ {
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			if line == 1 {
				p.bad(k, "%s is empty; give a header month,currency,rate and a line a rate", base)
			}
			return
		}
		if err != nil {
			p.bad(k, "%s: %v; each line is month,currency,rate", base, err)
			return
		}
		if line == 1 {
			if strings.Join(rec, ",") != "month,currency,rate" {
				p.bad(k, "%s line 1 is %q; the first line is the header month,currency,rate", base, strings.Join(rec, ","))
				return
			}
			continue
		}
		p.fxRate(c, k.n, fmt.Sprintf("%s (%s line %d)", k.path, base, line), rec[0], rec[1], rec[2], fmt.Sprintf("%s line %d", base, line))
	}
}
