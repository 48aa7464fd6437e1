package configs

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseReportingCurrency(t *testing.T) {
	cfg := mustParse(t, minimal+`reports:
  reporting_currency: EUR
  fx_rates:
    "2026-10": {USD: 0.9215, GBP: "1.153200000001"}
    2026-11: {USD: 0.93}
`, noEnv)
	r := cfg.Reports
	if r.ReportingCurrency != "EUR" || len(r.FXRates) != 2 || r.FXRates["2026-10"]["USD"].Rate.String() != "0.9215" ||
		r.FXRates["2026-10"]["GBP"].Rate.String() != "1.153200000001" || r.FXRates["2026-11"]["USD"].Source != "reports.fx_rates" {
		t.Errorf("rates %+v", r)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "rates.csv"), []byte("month,currency,rate\n2026-10,USD,0.9215\n2026-10, CHF, 1.0712\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := Parse([]byte(minimal+"reports:\n  reporting_currency: EUR\n  fx_rates_file: rates.csv\n"), dir, noEnv)
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Reports.FXRates["2026-10"]; got["USD"].Rate.String() != "0.9215" || got["CHF"].Rate.String() != "1.0712" ||
		got["CHF"].Source != filepath.Join(dir, "rates.csv")+" line 3" {
		t.Errorf("rates from the file %+v", cfg.Reports.FXRates)
	}
	if cfg := mustParse(t, minimal, noEnv); cfg.Reports.ReportingCurrency != "" || len(cfg.Reports.FXRates) != 0 {
		t.Errorf("left out: %+v", cfg.Reports)
	}
}

// Every refusal names the key and what is allowed.
func TestReportingCurrencyValidation(t *testing.T) {
	dir := t.TempDir()
	for name, text := range map[string]string{
		"header.csv": "currency,month,rate\n",
		"dup.csv":    "month,currency,rate\n2026-10,USD,0.9\n2026-10,USD,0.91\n",
		"bad.csv":    "month,currency,rate\n2026-10,USD,-1\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct{ name, reports, want string }{
		{"lower-case currency", "  reporting_currency: eur\n",
			`reports.reporting_currency: "eur" is not a currency code of three capital letters, e.g. EUR`},
		{"rates without a currency", "  fx_rates: {\"2026-10\": {USD: 0.9}}\n",
			`reports.fx_rates: rates without reports.reporting_currency; set it to the currency they convert into, e.g. EUR`},
		{"both", "  reporting_currency: EUR\n  fx_rates: {\"2026-10\": {USD: 0.9}}\n  fx_rates_file: rates.csv\n",
			`reports.fx_rates and fx_rates_file: set one, not both`},
		{"bad month", "  reporting_currency: EUR\n  fx_rates: {\"2026-13\": {USD: 0.9}}\n",
			`reports.fx_rates.2026-13.USD: "2026-13" is not a month as YYYY-MM, e.g. 2026-10`},
		{"negative rate", "  reporting_currency: EUR\n  fx_rates: {\"2026-10\": {USD: -0.9}}\n",
			`reports.fx_rates.2026-10.USD: "-0.9" is not a rate above 0 with at most 12 decimal places: how many EUR one USD is worth, e.g. 0.9215`},
		{"the reporting currency", "  reporting_currency: EUR\n  fx_rates: {\"2026-10\": {EUR: 1}}\n",
			`reports.fx_rates.2026-10.EUR: EUR is the reporting currency itself, which converts at 1; leave it out`},
		{"not a mapping", "  reporting_currency: EUR\n  fx_rates: [0.9]\n",
			`reports.fx_rates: must be a mapping of month (YYYY-MM) to currency and rate`},
		{"no file", "  reporting_currency: EUR\n  fx_rates_file: none.csv\n",
			`reports.fx_rates_file: open ` + filepath.Join(dir, "none.csv")},
		{"file header", "  reporting_currency: EUR\n  fx_rates_file: header.csv\n",
			`reports.fx_rates_file: ` + filepath.Join(dir, "header.csv") + ` line 1 is "currency,month,rate"; the first line is the header month,currency,rate`},
		{"file twice", "  reporting_currency: EUR\n  fx_rates_file: dup.csv\n",
			`reports.fx_rates_file (` + filepath.Join(dir, "dup.csv") + ` line 3): a second rate for USD in 2026-10`},
		{"file negative", "  reporting_currency: EUR\n  fx_rates_file: bad.csv\n",
			`reports.fx_rates_file (` + filepath.Join(dir, "bad.csv") + ` line 2): "-1" is not a rate above 0`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			yml := minimal + "reports:\n" + tc.reports
			_, err := Parse([]byte(yml), dir, noEnv)
			var ce *Error
			if !errors.As(err, &ce) || len(ce.Problems) != 1 || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("config:\n%s\nerror %v\nwant one problem containing %q", yml, err, tc.want)
			}
		})
	}
}
