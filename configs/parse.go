package configs

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"

	"go.yaml.in/yaml/v3"
)

// The file's shape. Leaves are typed (at[T], list, mapping): each is read
// as its type when decoded and keeps its text, line and path, so its
// section's check (api.go, usage.go, reports.go, schedule.go, orgs.go,
// alerts.go, commitments.go, allocation.go) names the key, the value as
// written and its line, and a wrong type in one field does not hide the
// problems of the others. The yaml tags are the only list of keys: the decode that refuses
// unknown keys and names every key reads them.
type rawConfig struct {
	API rawAPI `yaml:"api"`
	// Organizations: nil or empty is the api: form, one organization.
	Organizations *[]rawOrganization `yaml:"organizations"`
	Usage         rawUsage           `yaml:"usage"`
	Store         rawStore           `yaml:"store"`
	Reports       rawReports         `yaml:"reports"`
	Schedule      rawSchedule        `yaml:"schedule"`
	Export        rawExport          `yaml:"export"`
	Lake          rawLake            `yaml:"lake"`
	Budgets       *[]rawBudget       `yaml:"budgets"`
	Commitments   *[]rawCommitment   `yaml:"commitments"`
	Anomalies     rawAnomalies       `yaml:"anomalies"`
	Alerts        rawAlerts          `yaml:"alerts"`
	Allocation    rawAllocation      `yaml:"allocation"`
}

// parser collects every problem rather than stopping at the first, so one
// edit fixes a config.
type parser struct {
	dir      string
	getenv   func(string) string
	problems []string
	warnings []string
	// orgNames are the organizations: names, for the budgets that name
	// one; empty for the api: form.
	orgNames []string
	// grouped is set when the config lists organizations:, whose project
	// names may be each organization's own.
	grouped bool
	// dropped holds the paths of list items of the wrong shape, reported
	// already, so their missing fields are not reported again; blank
	// those of null items, which are no entry.
	dropped, blank map[string]bool
}

// addf records a problem with field path, adding the line when known.
func (p *parser) addf(n *yaml.Node, path, format string, args ...any) {
	msg := path + ": " + fmt.Sprintf(format, args...)
	if n != nil && n.Line > 0 {
		msg += fmt.Sprintf(" (line %d)", n.Line)
	}
	p.problems = append(p.problems, msg)
}

// listed returns the indices of the entries of list, the list at path,
// that are not null (a stray "-" is no entry) and, when shaped, not of the
// wrong shape either (the decode has reported those).
func listed[T any](p *parser, list *[]T, path string, shaped bool) []int {
	if list == nil {
		return nil
	}
	var out []int
	for i := range *list {
		ip := fmt.Sprintf("%s[%d]", path, i)
		if !p.blank[ip] && !(shaped && p.dropped[ip]) {
			out = append(out, i)
		}
	}
	return out
}

// bad records a problem with the value at k.
func (p *parser) bad(k key, format string, args ...any) {
	p.addf(k.n, k.path, format, args...)
}

func (p *parser) parse(data []byte) *Config {
	if len(data) > maxConfigSize {
		p.addf(nil, "config", "is %d bytes, more than the %d a config may have", len(data), maxConfigSize)
		return nil
	}
	var root yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&root); err != nil && !errors.Is(err, io.EOF) {
		p.addf(nil, "config", "not valid YAML: %v", err)
		return nil
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		p.addf(&extra, "config", "holds more than one YAML document; keep one")
		return nil
	}
	var raw rawConfig
	doc := &root
	if doc.Kind == yaml.DocumentNode && len(doc.Content) == 1 {
		doc = doc.Content[0]
	}
	name(reflect.ValueOf(&raw).Elem(), "")
	if doc.Kind != 0 && !isNull(doc) {
		before := len(p.problems)
		p.decode(doc, reflect.ValueOf(&raw).Elem(), "")
		if len(p.problems) == before {
			// The decode above refuses unknown keys with the field's
			// path; the yaml decoder's own check must agree with it.
			strict := yaml.NewDecoder(bytes.NewReader(data))
			strict.KnownFields(true)
			if err := strict.Decode(new(rawConfig)); err != nil {
				p.addf(nil, "config", "%v", err)
			}
		}
	}
	cfg := &Config{}
	p.api(&raw.API, &cfg.API)
	p.grouped = len(listed(p, raw.Organizations, "organizations", false)) > 0
	p.usage(&raw.Usage, &cfg.Usage)
	p.organizations(raw.Organizations, &raw.API, cfg)
	p.store(&raw.Store, &cfg.Store)
	p.reports(&raw.Reports, &cfg.Reports)
	p.schedule(&raw.Schedule, &cfg.Schedule)
	p.export(&raw.Export, &cfg.Export)
	p.lake(&raw.Lake, &cfg.Lake)
	p.budgets(raw.Budgets, &cfg.Budgets)
	p.commitments(raw.Commitments, &cfg.Commitments)
	p.anomalies(&raw.Anomalies, &cfg.Anomalies)
	p.alerts(&raw.Alerts, &cfg.Alerts)
	p.allocation(&raw.Allocation, &cfg.Usage, &cfg.Allocation)
	p.budgetCentres(raw.Budgets, cfg.Budgets, cfg.Allocation)
	cfg.Warnings = p.warnings
	return cfg
}
