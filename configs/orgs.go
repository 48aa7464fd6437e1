package configs

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/tally-dev/tally"
)

// Organization is one organization Tally fetches: its own token, address,
// filters and paths. The api: form is one organization with Name "" (named
// from the store, or from the organization resource when first fetched);
// organizations: lists several, each named.
type Organization struct {
	Name      string
	BaseURL   string // api.base_url unless the organization sets its own
	TokenEnv  string // "" when TokenFile is set
	TokenFile string // absolute
	// The usage filters: the organization's own, else usage's.
	ProjectNames, PaymentMethodIDs, MeterNames []string
	// Paths overrides resource paths: api.paths, then the organization's.
	Paths map[string]string
	// Field is where the organization is configured ("api" or
	// "organizations[i]"), for errors that name it.
	Field string
}

// Grouped reports whether the config lists organizations (organizations:)
// rather than the single api: form. A shard's config is grouped, even when
// the shard takes none of them.
func (c *Config) Grouped() bool {
	return !c.Shard.IsZero() || (len(c.Organizations) > 0 && c.Organizations[0].Name != "")
}

// Organization returns the organization named name, or an error naming
// the ones there are.
func (c *Config) Organization(name string) (Organization, error) {
	var names []string
	for _, o := range c.Organizations {
		if o.Name == name {
			return o, nil
		}
		names = append(names, o.Name)
	}
	if !c.Grouped() {
		return Organization{}, fmt.Errorf("--org %q: this config has no organizations: list (the api: form is one organization); leave --org out", name)
	}
	return Organization{}, fmt.Errorf("--org %q is not in organizations: (%s)", name, strings.Join(names, ", "))
}

// orgNameRE is what an organization's name may be: it names files (each
// organization's workbook) and is its key in every table.
var orgNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$`)

type rawOrganization struct {
	Name             at[string] `yaml:"name"`
	TokenEnv         at[string] `yaml:"token_env"`
	TokenFile        at[string] `yaml:"token_file"`
	BaseURL          at[string] `yaml:"base_url"`
	ProjectNames     list       `yaml:"project_names"`
	PaymentMethodIDs list       `yaml:"payment_method_ids"`
	MeterNames       list       `yaml:"meter_names"`
	Paths            mapping    `yaml:"paths"`
}

// organizations builds cfg.Organizations: the api: form's one, or the
// listed ones. It runs after api and usage.
func (p *parser) organizations(raw *[]rawOrganization, api *rawAPI, cfg *Config) {
	entries := listed(p, raw, "organizations", false)
	if len(entries) == 0 {
		cfg.Organizations = []Organization{{
			BaseURL: cfg.API.BaseURL, TokenEnv: cfg.API.TokenEnv, TokenFile: cfg.API.TokenFile,
			ProjectNames: cfg.Usage.ProjectNames, PaymentMethodIDs: cfg.Usage.PaymentMethodIDs, MeterNames: cfg.Usage.MeterNames,
			Paths: cfg.API.Paths, Field: "api",
		}}
		return
	}
	for _, k := range []at[string]{api.TokenEnv, api.TokenFile} {
		if k.given() {
			p.addf(k.n, "api.token_env/api.token_file", "with organizations: each organization names its own token (organizations[].token_env or token_file); remove it from api:")
			break
		}
	}
	seen := map[string]string{}
	for _, i := range entries {
		o := p.organization(&(*raw)[i], fmt.Sprintf("organizations[%d]", i), cfg, seen)
		cfg.Organizations = append(cfg.Organizations, o)
		p.orgNames = append(p.orgNames, o.Name)
	}
}

// organization reads one of organizations: at field. seen holds the
// names so far, folded, by the field that gave each.
func (p *parser) organization(r *rawOrganization, field string, cfg *Config, seen map[string]string) Organization {
	o := Organization{Field: field}
	o.Name = p.text(r.Name, "")
	switch {
	case o.Name == "":
		p.bad(r.Name.key, "missing; name the organization (letters, digits, '.', '_', '-'; it names its workbook and is its key in the store)")
	case !orgNameRE.MatchString(o.Name):
		p.bad(r.Name.key, "%q is not a name of letters, digits, '.', '_' and '-' (up to 63, starting with a letter or digit)", o.Name)
	case seen[strings.ToLower(o.Name)] != "":
		p.bad(r.Name.key, "%q is also the name of %s; names must differ (ignoring case)", o.Name, seen[strings.ToLower(o.Name)])
	default:
		seen[strings.ToLower(o.Name)] = field
	}
	o.BaseURL = cfg.API.BaseURL
	blank := p.notEmpty(r.BaseURL, "leave the key out for api.base_url ("+cfg.API.BaseURL+"), or give the organization's https:// address")
	if s := p.text(r.BaseURL, ""); s != "" && !blank {
		o.BaseURL = p.baseURL(r.BaseURL.n, field+".base_url", s)
	}
	if cfg.Usage.Source == tally.SourceLake {
		// A group job reading the lake sends nothing to the interface.
		for _, k := range []at[string]{r.TokenEnv, r.TokenFile, r.BaseURL} {
			if k.given() {
				p.addf(k.n, k.path, "usage.source lake reads the lake, not the interface: leave it out")
			}
		}
		if r.ProjectNames.given() || r.PaymentMethodIDs.given() || r.MeterNames.given() || r.Paths.given() {
			p.addf(r.Name.n, field, "usage.source lake takes no project_names, payment_method_ids, meter_names or paths: the lake holds the organization's usage as its shard fetched it")
		}
		return o
	}
	o.TokenEnv, o.TokenFile = p.tokenKeys(r.TokenEnv, r.TokenFile, field)
	if o.TokenEnv == "" && o.TokenFile == "" {
		p.addf(r.Name.n, r.TokenEnv.path, "missing; name the environment variable holding this organization's token (or set token_file): a token gives access to one organization")
	}
	p.orgFilters(r, field, cfg, &o)
	o.Paths = map[string]string{}
	for k, v := range cfg.API.Paths {
		o.Paths[k] = v
	}
	if r.Paths.given() {
		for k, v := range p.paths(r.Paths) {
			o.Paths[k] = v
		}
	}
	return o
}

// orgFilters reads an organization's usage filters; each left out is
// usage's.
func (p *parser) orgFilters(r *rawOrganization, field string, cfg *Config, o *Organization) {
	o.ProjectNames, o.PaymentMethodIDs, o.MeterNames = cfg.Usage.ProjectNames, cfg.Usage.PaymentMethodIDs, cfg.Usage.MeterNames
	if r.ProjectNames.given() {
		o.ProjectNames = p.list(r.ProjectNames, nil)
	}
	if r.PaymentMethodIDs.given() {
		o.PaymentMethodIDs = p.list(r.PaymentMethodIDs, func(s string) string {
			if !uuidRE.MatchString(s) {
				return "is not a payment method id (a UUID)"
			}
			return ""
		})
	}
	if r.MeterNames.given() {
		o.MeterNames = p.list(r.MeterNames, nil)
	}
	if cfg.Usage.Source == tally.SourceProjects {
		switch {
		case len(o.ProjectNames) == 0:
			p.addf(r.Name.n, r.ProjectNames.path, "missing; usage.source projects reads each listed project's usage report: list the organization's projects here (or in usage.project_names), e.g. [newsroom, archive]")
		case len(o.PaymentMethodIDs) > 0 || len(o.MeterNames) > 0:
			p.addf(r.Name.n, field, "usage.source projects takes no payment_method_ids or meter_names: the per-project report has no such filters")
		}
	}
	if len(o.ProjectNames) > 0 && len(o.PaymentMethodIDs) > 0 {
		p.addf(r.PaymentMethodIDs.n, field+".project_names and payment_method_ids", "set one, not both (the interface takes one or the other)")
	}
}

// Orgs returns the organizations to fetch: none for a shard that takes
// none. A Config built by hand rather than loaded (tests) is the api: form.
func (c *Config) Orgs() []Organization {
	if len(c.Organizations) > 0 || !c.Shard.IsZero() {
		return c.Organizations
	}
	return []Organization{{
		BaseURL: c.API.BaseURL, TokenEnv: c.API.TokenEnv, TokenFile: c.API.TokenFile,
		ProjectNames: c.Usage.ProjectNames, PaymentMethodIDs: c.Usage.PaymentMethodIDs, MeterNames: c.Usage.MeterNames,
		Paths: c.API.Paths, Field: "api",
	}}
}

// QueryBase is UsageQueryBase with o's filters and name.
func (c *Config) QueryBase(o Organization) tally.UsageQuery {
	q := c.UsageQueryBase()
	q.ProjectNames = append([]string(nil), o.ProjectNames...)
	q.PaymentMethodIDs = append([]string(nil), o.PaymentMethodIDs...)
	q.MeterNames = append([]string(nil), o.MeterNames...)
	q.Organization = o.Name
	return q
}
