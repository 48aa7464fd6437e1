package configs

import (
	"math"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

type rawStore struct {
	Path at[string] `yaml:"path"`
}

type rawReports struct {
	Dir       at[string]  `yaml:"dir"`
	Tolerance at[float64] `yaml:"tolerance"`
	Months    list        `yaml:"months"`
	// CloseAfter: "" (never) or <n>d / <n>h after the month's end.
	CloseAfter at[span]   `yaml:"close_after"`
	Deliver    rawDeliver `yaml:"deliver"`
	// ReportingCurrency and its rates (fx.go).
	ReportingCurrency at[string] `yaml:"reporting_currency"`
	FXRates           mapping    `yaml:"fx_rates"`
	FXRatesFile       at[string] `yaml:"fx_rates_file"`
}

type rawDeliver struct {
	Dir  at[string] `yaml:"dir"`
	SMTP rawSMTP    `yaml:"smtp"`
}

type rawSMTP struct {
	Host         at[string]        `yaml:"host"`
	Port         at[int]           `yaml:"port"`
	Security     at[string]        `yaml:"security"`
	Username     at[string]        `yaml:"username"`
	PasswordEnv  at[string]        `yaml:"password_env"`
	PasswordFile at[string]        `yaml:"password_file"`
	From         at[string]        `yaml:"from"`
	To           list              `yaml:"to"`
	Subject      at[string]        `yaml:"subject"`
	Timeout      at[time.Duration] `yaml:"timeout"`
}

func (p *parser) store(r *rawStore, c *StoreConfig) {
	c.Path = p.path(p.text(r.Path, DefaultStorePath))
	if env := p.getenv(EnvDB); env != "" {
		// A path typed at a shell is relative to where it was typed.
		c.Path = filepath.Clean(env)
	}
}

func (p *parser) reports(r *rawReports, c *ReportsConfig) {
	c.Dir = p.path(p.text(r.Dir, DefaultReportsDir))
	c.Tolerance = DefaultTolerance
	if t := r.Tolerance; p.has(t.key) {
		if v := t.V; !t.ok || math.IsNaN(v) || v < 0 || v > 1 {
			p.bad(t.key, "%q is not a fraction from 0 to 1, e.g. 0.005 for 0.5 %%", t.S)
		} else {
			c.Tolerance = v
		}
	}
	c.CloseAfter = p.closeAfter(r.CloseAfter)
	p.deliver(&r.Deliver, &c.Deliver)
	p.fx(r, c)
	if !r.Months.given() {
		c.Months = slices.Clone(DefaultMonths)
		return
	}
	c.Months = p.list(r.Months, func(s string) string {
		if !slices.Contains(DefaultMonths, s) {
			return "is not one of previous, current"
		}
		return ""
	})
}

// closeAfter reads reports.close_after: "" (never), or <n>d or <n>h
// after a month's end.
func (p *parser) closeAfter(ca at[span]) time.Duration {
	if !p.has(ca.key) || ca.S == "" {
		return 0
	}
	switch d := time.Duration(ca.V); {
	case !ca.ok || d == 0:
		p.bad(ca.key, "%q is not <n>d or <n>h with n ≥ 1 (the time after a month's end at which the nightly job closes it), e.g. 5d; or \"\" to never close automatically", ca.S)
	case d > 366*24*time.Hour:
		p.bad(ca.key, "%q is longer than a year (366d); a month is closed within a year of its end, or by hand with tally close", ca.S)
	default:
		return d
	}
	return 0
}

// deliver reads reports.deliver: a folder, and/or a mail server.
func (p *parser) deliver(r *rawDeliver, c *DeliverConfig) {
	if s := p.text(r.Dir, ""); s != "" {
		c.Dir = p.path(s)
		if err := CheckDeliverDir(c.Dir); err != nil {
			p.bad(r.Dir.key, "%q %v; give a folder Tally may write into (the deliver step copies finished workbooks there)", s, err)
		}
	}
	m := &r.SMTP
	if !m.Host.given() && !m.From.given() && !m.To.given() && !m.Port.given() {
		return
	}
	c.SMTP = p.smtp(m)
}

// smtp reads reports.deliver.smtp, set when any of its addresses is.
func (p *parser) smtp(m *rawSMTP) *SMTPConfig {
	s := &SMTPConfig{
		Host:         p.text(m.Host, ""),
		Security:     p.text(m.Security, "starttls"),
		Username:     p.text(m.Username, ""),
		PasswordEnv:  p.text(m.PasswordEnv, ""),
		PasswordFile: p.text(m.PasswordFile, ""),
		From:         p.text(m.From, ""),
		Subject:      p.text(m.Subject, "Tally cost workbook {month}"),
	}
	if s.PasswordFile != "" {
		s.PasswordFile = p.path(s.PasswordFile)
	}
	if s.Host == "" {
		p.bad(m.Host.key, "missing; the mail server to send workbooks through, e.g. smtp.example.com")
	}
	if s.From == "" {
		p.bad(m.From.key, "missing; the sender address, e.g. tally@example.com")
	}
	if s.Security != "starttls" && s.Security != "tls" {
		p.bad(m.Security.key, "%q is not one of starttls (port 587), tls (implicit TLS, port 465)", s.Security)
	}
	def := 587
	if s.Security == "tls" {
		def = 465
	}
	s.Port = p.integer(m.Port, def, 1, 65535)
	s.Timeout = p.duration(m.Timeout, DefaultSMTPTimeout, true, time.Hour, "2m")
	p.smtpPassword(m, s)
	if !m.To.given() {
		p.bad(m.To.key, "missing; the recipients, e.g. [finance@example.com]")
	} else {
		s.To = p.list(m.To, func(v string) string {
			if !strings.Contains(v, "@") {
				return "is not an e-mail address"
			}
			return ""
		})
	}
	return s
}

// smtpPassword checks where the mail password comes from: a variable or a
// file, never the YAML.
func (p *parser) smtpPassword(m *rawSMTP, s *SMTPConfig) {
	if s.PasswordEnv != "" && s.PasswordFile != "" {
		p.addf(m.PasswordFile.n, "reports.deliver.smtp.password_env and password_file", "set one, not both")
	}
	if s.PasswordEnv != "" && !envNameRE.MatchString(s.PasswordEnv) {
		p.bad(m.PasswordEnv.key, "%q is not an environment variable name", s.PasswordEnv)
	}
	if s.Username != "" && s.PasswordEnv == "" && s.PasswordFile == "" {
		p.bad(m.Username.key, "is set but no password: set password_env or password_file (the password is never in the YAML)")
	}
}
