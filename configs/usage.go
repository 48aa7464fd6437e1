package configs

import (
	"time"

	"github.com/tally-dev/tally"
)

type rawUsage struct {
	Granularity      at[string] `yaml:"granularity"`
	Start            at[date]   `yaml:"start"`
	Lookback         at[span]   `yaml:"lookback"`
	StaleAfter       at[span]   `yaml:"stale_after"`
	Window           at[string] `yaml:"window"`
	Format           at[string] `yaml:"format"`
	ReportedDate     at[bool]   `yaml:"reported_date"`
	ProjectNames     list       `yaml:"project_names"`
	PaymentMethodIDs list       `yaml:"payment_method_ids"`
	MeterNames       list       `yaml:"meter_names"`
	Source           at[string] `yaml:"source"`
}

// usage reads usage: what to fetch, from when, and how.
func (p *parser) usage(r *rawUsage, c *UsageConfig) {
	c.Granularity = oneOf(p, r.Granularity, DefaultGranularity, tally.Granularities...)
	p.usageStart(r, c)
	p.usageSpans(r, c)
	p.usageWindow(r, c)
	p.usageFilters(r, c)
	p.usageSource(r, c)
}

// usageStart reads usage.start, the one key without a default.
func (p *parser) usageStart(r *rawUsage, c *UsageConfig) {
	s, ok := r.Start.S, p.has(r.Start.key)
	switch {
	case !r.Start.given() || (ok && s == ""):
		p.bad(r.Start.key, "missing; set the first day to backfill as YYYY-MM-DD, e.g. 2026-01-01")
	case !ok: // not a single value: reported
	case !r.Start.ok:
		p.bad(r.Start.key, "%q is not a YYYY-MM-DD date, e.g. 2026-01-01", s)
	default:
		c.Start = time.Time(r.Start.V)
	}
}

// usageSpans reads usage.lookback and usage.stale_after, spans in days or
// hours.
func (p *parser) usageSpans(r *rawUsage, c *UsageConfig) {
	c.Lookback = DefaultLookback
	if l := r.Lookback; p.has(l.key) {
		s, d := l.S, time.Duration(l.V)
		switch {
		case !l.ok:
			p.bad(r.Lookback.key, "%q is not <n>d or <n>h with n ≥ 0, e.g. 7d, 36h, 0d", s)
		case d > 3660*24*time.Hour:
			p.bad(r.Lookback.key, "%q is longer than ten years (3660d); older data is a backfill: set usage.start", s)
		default:
			c.Lookback = d
		}
	}

	c.StaleAfter = DefaultStaleAfter
	if st := r.StaleAfter; p.has(st.key) {
		s, d := st.S, time.Duration(st.V)
		switch {
		case !st.ok:
			p.bad(r.StaleAfter.key, "%q is not <n>d or <n>h, e.g. 2d, 36h", s)
		case d < MinStaleAfter || d > MaxStaleAfter:
			p.bad(r.StaleAfter.key, "%q is outside 1d to 90d: the newest day holding usage is at least a day old once it is over, and data a quarter old is past warning", s)
		default:
			c.StaleAfter = d
		}
	}
}

// usageWindow reads usage.window, which the granularity bounds, and
// usage.format.
func (p *parser) usageWindow(r *rawUsage, c *UsageConfig) {
	if p.has(r.Window.key) {
		s := r.Window.S
		if w, err := tally.ParseWindowSize(s); err != nil {
			p.bad(r.Window.key, "%v", err)
		} else if err := tally.CheckWindowSize(c.Granularity, w); err != nil {
			p.bad(r.Window.key, "%v", err)
		} else {
			c.Window = w
		}
	}

	c.Format = oneOf(p, r.Format, DefaultFormat, tally.FormatJSON, tally.FormatCSV)
}

// usageFilters reads the usage query's filters.
func (p *parser) usageFilters(r *rawUsage, c *UsageConfig) {
	c.ReportedDate = p.boolean(r.ReportedDate)
	c.ProjectNames = p.list(r.ProjectNames, nil)
	c.PaymentMethodIDs = p.list(r.PaymentMethodIDs, func(s string) string {
		if !uuidRE.MatchString(s) {
			return "is not a UUID such as 0b6f2a4e-5c1d-4e8f-9a3b-7c2d1e0f4a5b"
		}
		return ""
	})
	c.MeterNames = p.list(r.MeterNames, nil)
	if len(c.ProjectNames) > 0 && len(c.PaymentMethodIDs) > 0 {
		p.addf(r.PaymentMethodIDs.n, "usage.project_names and usage.payment_method_ids", "set one, not both: the interface refuses the two filters together")
	}
}

// usageSource reads usage.source: the organization's usage report, or
// each project's, which takes fewer settings.
func (p *parser) usageSource(r *rawUsage, c *UsageConfig) {
	c.Source = oneOf(p, r.Source, tally.SourceOrganization, tally.SourceOrganization, tally.SourceProjects, tally.SourceLake)
	if c.Source == tally.SourceLake {
		if !p.grouped {
			p.bad(r.Source.key, "lake reads the organizations: list's organizations from the lake's usage table: list them by name (organizations: [{name: emea}, {name: us}]), as the shards that export them name them")
		}
		switch c.Granularity {
		case tally.Hour, tally.Day, tally.Month:
		default:
			p.bad(r.Granularity.key, "%q with usage.source lake: a month of the lake is loaded as month windows, which hold hour, day or month buckets only", c.Granularity)
		}
		if len(c.ProjectNames) > 0 || len(c.PaymentMethodIDs) > 0 || len(c.MeterNames) > 0 || c.ReportedDate {
			p.bad(r.Source.key, "lake takes no project_names, payment_method_ids, meter_names or reported_date: the lake holds each organization's usage as its shard fetched it")
		}
	}
	if c.Source == tally.SourceProjects {
		if len(c.ProjectNames) == 0 && !p.grouped {
			p.bad(r.ProjectNames.key, "missing; usage.source projects reads each listed project's usage report, e.g. [newsroom, archive]")
		}
		if c.Granularity != tally.Day {
			p.bad(r.Granularity.key, "%q with usage.source projects: the per-project report gives days (differences of daily reads); use day", c.Granularity)
		}
		if len(c.PaymentMethodIDs) > 0 || len(c.MeterNames) > 0 || c.ReportedDate {
			p.bad(r.Source.key, "projects takes no payment_method_ids, meter_names or reported_date: the per-project report has no such filters")
		}
	}
}
