package configs

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"

	"go.yaml.in/yaml/v3"

	"github.com/tally-dev/tally"
)

// The file's shape. Leaves are yaml.Nodes so that every value is converted
// here, with errors that name the field, and so a wrong type in one field
// does not hide the problems of the others. The yaml tags are the only list
// of keys: the walk that refuses unknown keys reads them.
type rawConfig struct {
	API rawAPI `yaml:"api"`
	// Organizations: nil or empty is the api: form, one organization.
	Organizations *[]rawOrganization `yaml:"organizations"`
	Usage         rawUsage           `yaml:"usage"`
	Store         rawStore           `yaml:"store"`
	Reports       rawReports         `yaml:"reports"`
	Schedule      rawSchedule        `yaml:"schedule"`
	Export        rawExport          `yaml:"export"`
	Budgets       *[]rawBudget       `yaml:"budgets"`
	Anomalies     rawAnomalies       `yaml:"anomalies"`
	Alerts        rawAlerts          `yaml:"alerts"`
	Allocation    rawAllocation      `yaml:"allocation"`
}

type rawBudget struct {
	Name     yaml.Node `yaml:"name"`
	Scope    yaml.Node `yaml:"scope"`
	Currency yaml.Node `yaml:"currency"`
	Amount   yaml.Node `yaml:"amount"`
	Actual   yaml.Node `yaml:"actual"`
	Forecast yaml.Node `yaml:"forecast"`
}

type rawAnomalies struct {
	MADs       yaml.Node `yaml:"mads"`
	MinAmount  yaml.Node `yaml:"min_amount"`
	MinPercent yaml.Node `yaml:"min_percent"`
}

type rawAlerts struct {
	Webhook rawWebhook `yaml:"webhook"`
}

type rawWebhook struct {
	URL        yaml.Node `yaml:"url"`
	SecretEnv  yaml.Node `yaml:"secret_env"`
	SecretFile yaml.Node `yaml:"secret_file"`
	Timeout    yaml.Node `yaml:"timeout"`
}

type rawAPI struct {
	BaseURL       yaml.Node `yaml:"base_url"`
	TokenEnv      yaml.Node `yaml:"token_env"`
	TokenFile     yaml.Node `yaml:"token_file"`
	Timeout       yaml.Node `yaml:"timeout"`
	AnswerTimeout yaml.Node `yaml:"answer_timeout"`
	Concurrency   yaml.Node `yaml:"concurrency"`
	// TotalConcurrency bounds windows in flight over every organization.
	TotalConcurrency yaml.Node `yaml:"total_concurrency"`
	MaxRetries       yaml.Node `yaml:"max_retries"`
	ConnectRetries   yaml.Node `yaml:"connect_retries"`
	TokenWarnBefore  yaml.Node `yaml:"token_warn_before"`
	Paths            yaml.Node `yaml:"paths"`
}

type rawUsage struct {
	Granularity      yaml.Node `yaml:"granularity"`
	Start            yaml.Node `yaml:"start"`
	Lookback         yaml.Node `yaml:"lookback"`
	StaleAfter       yaml.Node `yaml:"stale_after"`
	Window           yaml.Node `yaml:"window"`
	Format           yaml.Node `yaml:"format"`
	ReportedDate     yaml.Node `yaml:"reported_date"`
	ProjectNames     yaml.Node `yaml:"project_names"`
	PaymentMethodIDs yaml.Node `yaml:"payment_method_ids"`
	MeterNames       yaml.Node `yaml:"meter_names"`
	Source           yaml.Node `yaml:"source"`
}

type rawStore struct {
	Path yaml.Node `yaml:"path"`
}

type rawReports struct {
	Dir       yaml.Node `yaml:"dir"`
	Tolerance yaml.Node `yaml:"tolerance"`
	Months    yaml.Node `yaml:"months"`
	// CloseAfter: "" (never) or <n>d / <n>h after the month's end.
	CloseAfter yaml.Node  `yaml:"close_after"`
	Deliver    rawDeliver `yaml:"deliver"`
}

type rawDeliver struct {
	Dir  yaml.Node `yaml:"dir"`
	SMTP rawSMTP   `yaml:"smtp"`
}

type rawSMTP struct {
	Host         yaml.Node `yaml:"host"`
	Port         yaml.Node `yaml:"port"`
	Security     yaml.Node `yaml:"security"`
	Username     yaml.Node `yaml:"username"`
	PasswordEnv  yaml.Node `yaml:"password_env"`
	PasswordFile yaml.Node `yaml:"password_file"`
	From         yaml.Node `yaml:"from"`
	To           yaml.Node `yaml:"to"`
	Subject      yaml.Node `yaml:"subject"`
	Timeout      yaml.Node `yaml:"timeout"`
}

type rawExport struct {
	Dir      yaml.Node `yaml:"dir"`
	Format   yaml.Node `yaml:"format"`
	FOCUSCSV yaml.Node `yaml:"focus_csv"`
	CSVRaw   yaml.Node `yaml:"csv_raw"`
}

type rawSchedule struct {
	Jobs     *[]rawJob `yaml:"jobs"` // nil: left out, so the default job
	LockWait yaml.Node `yaml:"lock_wait"`
	Grace    yaml.Node `yaml:"grace"`
}

type rawJob struct {
	Name yaml.Node `yaml:"name"`
	Cron yaml.Node `yaml:"cron"`
	Run  yaml.Node `yaml:"run"`
}

var nodeType = reflect.TypeOf(yaml.Node{})

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
	// already, so their missing fields are not reported again.
	dropped map[string]bool
}

// addf records a problem with field path, adding the line when known.
func (p *parser) addf(n *yaml.Node, path, format string, args ...any) {
	msg := path + ": " + fmt.Sprintf(format, args...)
	if n != nil && n.Line > 0 {
		msg += fmt.Sprintf(" (line %d)", n.Line)
	}
	p.problems = append(p.problems, msg)
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
	if doc.Kind != 0 && !isNull(doc) {
		before := len(p.problems)
		if !p.walk(doc, reflect.TypeOf(raw), "") {
			doc = &yaml.Node{Kind: yaml.MappingNode}
		}
		if err := doc.Decode(&raw); err != nil {
			p.addf(nil, "config", "%v", err)
			return nil
		}
		if len(p.problems) == before {
			// The walk above refuses unknown keys with the field's path;
			// the decoder's own check must agree with it.
			strict := yaml.NewDecoder(bytes.NewReader(data))
			strict.KnownFields(true)
			if err := strict.Decode(new(rawConfig)); err != nil {
				p.addf(nil, "config", "%v", err)
			}
		}
	}
	cfg := &Config{}
	p.api(&raw.API, &cfg.API)
	p.grouped = raw.Organizations != nil && len(*raw.Organizations) > 0
	p.usage(&raw.Usage, &cfg.Usage)
	p.organizations(raw.Organizations, &raw.API, cfg)
	p.store(&raw.Store, &cfg.Store)
	p.reports(&raw.Reports, &cfg.Reports)
	p.schedule(&raw.Schedule, &cfg.Schedule)
	p.export(&raw.Export, &cfg.Export)
	p.budgets(raw.Budgets, &cfg.Budgets)
	p.anomalies(&raw.Anomalies, &cfg.Anomalies)
	p.alerts(&raw.Alerts, &cfg.Alerts)
	p.allocation(&raw.Allocation, &cfg.Usage, &cfg.Allocation)
	p.budgetCentres(raw.Budgets, cfg.Budgets, cfg.Allocation)
	cfg.Warnings = p.warnings
	return cfg
}

// walk checks a mapping against the struct type t: it reports and removes
// unknown keys, keys given twice and values of the wrong shape, so the
// decode that follows cannot fail and the rest of the file is still
// checked. It returns false, reported, when n is not a mapping at all; the
// caller then drops n rather than change a node an alias may share.
func (p *parser) walk(n *yaml.Node, t reflect.Type, path string) bool {
	n = deref(n)
	if isNull(n) {
		return true
	}
	fields := map[string]reflect.Type{}
	var keys []string
	for i := 0; i < t.NumField(); i++ {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ",")
		fields[name] = t.Field(i).Type
		keys = append(keys, name)
	}
	where := "the top level"
	if path != "" {
		where = path
	}
	if n.Kind != yaml.MappingNode {
		p.addf(n, orTop(path), "must be a mapping with keys %s, not %s", strings.Join(keys, ", "), describe(n))
		return false
	}
	seen := map[string]int{}
	kept := n.Content[:0:0]
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		name := k.Value
		full := join(path, name)
		ft, known := fields[name]
		switch {
		case k.Kind != yaml.ScalarNode:
			p.addf(k, orTop(path), "keys must be plain names, not %s", describe(k))
			continue
		case name == "<<":
			p.addf(k, full, "merge keys are not supported; write the keys out")
			continue
		case !known:
			msg := fmt.Sprintf("unknown key; known keys in %s: %s", where, strings.Join(keys, ", "))
			if s := suggest(name, keys); s != "" {
				msg += "; did you mean " + s + "?"
			}
			p.addf(k, full, "%s", msg)
			continue
		case seen[name] > 0:
			p.addf(k, full, "given twice (first on line %d)", seen[name])
			continue
		}
		seen[name] = k.Line
		if !p.walkValue(v, ft, full) {
			continue
		}
		kept = append(kept, k, v)
	}
	n.Content = kept
	return true
}

// walkValue checks a value against its field type and reports whether to
// keep it.
func (p *parser) walkValue(v *yaml.Node, ft reflect.Type, path string) bool {
	switch {
	case ft == nodeType:
		return true
	case ft.Kind() == reflect.Struct:
		return p.walk(v, ft, path)
	case ft.Kind() == reflect.Pointer && ft.Elem().Kind() == reflect.Slice:
		d := deref(v)
		if isNull(d) {
			return true
		}
		if d.Kind != yaml.SequenceNode {
			p.addf(d, path, "must be a list, not %s", describe(d))
			return false
		}
		for i, item := range d.Content {
			ip := fmt.Sprintf("%s[%d]", path, i)
			if !p.walk(item, ft.Elem().Elem(), ip) {
				// Keep the item's place, so later items keep their
				// index in messages, but not its value.
				d.Content[i] = &yaml.Node{Kind: yaml.MappingNode}
				if p.dropped == nil {
					p.dropped = map[string]bool{}
				}
				p.dropped[ip] = true
			}
		}
		return true
	}
	panic("configs: no walk for field type " + ft.String())
}

func orTop(path string) string {
	if path == "" {
		return "config"
	}
	return path
}

func join(path, key string) string {
	key = keyName(key)
	if path == "" {
		return key
	}
	return path + "." + key
}

// keyName quotes a key that is not a plain name, so a key holding a newline
// or a dot cannot break a problem onto two lines or pass for a nested path.
func keyName(key string) string {
	for _, r := range key {
		if r == '.' || r == ' ' || !unicode.IsGraphic(r) {
			return strconv.Quote(key)
		}
	}
	if key == "" {
		return `""`
	}
	return key
}

// deref follows an alias to the node it names.
func deref(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode && n.Alias != nil && i < 10; i++ {
		n = n.Alias
	}
	return n
}

func isNull(n *yaml.Node) bool {
	n = deref(n)
	return n == nil || n.Kind == 0 || (n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null")
}

func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		return strconv.Quote(n.Value)
	case yaml.AliasNode:
		return "an alias"
	}
	return "nothing"
}

// suggest returns the known key closest to a misspelt one, if close.
func suggest(name string, keys []string) string {
	best, bestD := "", 3
	for _, k := range keys {
		if d := editDistance(name, k); d < bestD {
			best, bestD = k, d
		}
	}
	return best
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// scalar returns a leaf's text; ok is false when it is left out, null or
// not a single value (reported).
func (p *parser) scalar(n *yaml.Node, path string) (string, bool) {
	n = deref(n)
	if isNull(n) {
		return "", false
	}
	if n.Kind != yaml.ScalarNode {
		p.addf(n, path, "must be a single value, not %s", describe(n))
		return "", false
	}
	return n.Value, true
}

// notEmpty refuses a key given as "" (or blanks), which text would
// otherwise read as left out: a value written down and then emptied is a
// mistake to show, not a default to take silently.
// It reports whether it refused one.
func (p *parser) notEmpty(n *yaml.Node, path, allowed string) bool {
	// The caller's text has reported a value that is not a scalar.
	if d := deref(n); !isNull(d) && d.Kind == yaml.ScalarNode && strings.TrimSpace(d.Value) == "" {
		p.addf(d, path, "%q is empty; %s", d.Value, allowed)
		return true
	}
	return false
}

// text returns a string leaf, or def when it is left out or empty.
func (p *parser) text(n *yaml.Node, path, def string) string {
	if s, ok := p.scalar(n, path); ok && s != "" {
		return s
	}
	return def
}

func (p *parser) integer(n *yaml.Node, path string, def, lo, hi int) int {
	s, ok := p.scalar(n, path)
	if !ok {
		return def
	}
	v, err := strconv.Atoi(s)
	if err != nil || v < lo || v > hi {
		p.addf(deref(n), path, "%q is not a whole number from %d to %d", s, lo, hi)
		return def
	}
	return v
}

// duration reads a Go duration from 0 (or above 0 when positive) to hi.
func (p *parser) duration(n *yaml.Node, path string, def time.Duration, positive bool, hi time.Duration, example string) time.Duration {
	s, ok := p.scalar(n, path)
	if !ok || s == "" {
		return def
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 || (positive && d == 0) || d > hi {
		lo := "from 0"
		if positive {
			lo = "above 0 and"
		}
		p.addf(deref(n), path, "%q is not a duration %s up to %s, e.g. %s", s, lo, fmtDuration(hi), example)
		return def
	}
	return d
}

// fmtDuration prints 1h0m0s as 1h, the way a person writes it.
func fmtDuration(d time.Duration) string {
	s := d.String()
	s = strings.TrimSuffix(s, "0s")
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

func (p *parser) boolean(n *yaml.Node, path string) bool {
	s, ok := p.scalar(n, path)
	if !ok {
		return false
	}
	var b bool
	if d := deref(n); d.ShortTag() == "!!bool" && d.Decode(&b) == nil {
		return b
	}
	p.addf(deref(n), path, "%q is not true or false", s)
	return false
}

// list returns a list of strings; nil when left out. Items must be
// non-empty and distinct (a repeated filter would change the query's scope
// without changing its rows); check, when set, says what else is wrong with
// an item.
func (p *parser) list(n *yaml.Node, path string, check func(string) string) []string {
	n = deref(n)
	if isNull(n) {
		return nil
	}
	if n.Kind != yaml.SequenceNode {
		p.addf(n, path, "must be a list, not %s", describe(n))
		return nil
	}
	var out []string
	seen := map[string]bool{}
	for i, item := range n.Content {
		ip := fmt.Sprintf("%s[%d]", path, i)
		s, ok := p.scalar(item, ip)
		switch {
		case !ok && isNull(item):
			p.addf(deref(item), ip, "must not be empty")
		case !ok:
		case strings.TrimSpace(s) == "":
			p.addf(deref(item), ip, "%q must not be empty", s)
		case seen[s]:
			p.addf(deref(item), ip, "%q is listed twice", s)
		case check != nil && check(s) != "":
			p.addf(deref(item), ip, "%q %s", s, check(s))
		default:
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// path resolves a file path from the config against the config's folder.
func (p *parser) path(s string) string {
	if s == "" || filepath.IsAbs(s) {
		return filepath.Clean(s)
	}
	return filepath.Join(p.dir, s)
}

var (
	envNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	uuidRE    = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)
	lookRE    = regexp.MustCompile(`^([0-9]{1,6})([dh])$`)
)

func (p *parser) api(r *rawAPI, c *APIConfig) {
	c.BaseURL = p.text(&r.BaseURL, "api.base_url", DefaultBaseURL)
	if p.notEmpty(&r.BaseURL, "api.base_url", "leave the key out for the vendor's "+DefaultBaseURL+", or give the interface's https:// address") {
		c.BaseURL = DefaultBaseURL // reported; the rest is checked as if left out
	}
	field, from := "api.base_url", &r.BaseURL
	if env := p.getenv(EnvBaseURL); env != "" {
		c.BaseURL, field, from = env, "api.base_url (from "+EnvBaseURL+")", nil
	}
	c.BaseURL = p.baseURL(from, field, c.BaseURL)

	c.TokenEnv = p.text(&r.TokenEnv, "api.token_env", "")
	if c.TokenEnv != "" && !envNameRE.MatchString(c.TokenEnv) {
		p.addf(deref(&r.TokenEnv), "api.token_env", "%q is not an environment variable name (letters, digits and _, not starting with a digit)", c.TokenEnv)
	}
	if f := p.text(&r.TokenFile, "api.token_file", ""); f != "" {
		c.TokenFile = p.path(f)
		if fi, err := os.Stat(c.TokenFile); err == nil && fi.Mode().Perm()&0o044 != 0 {
			p.warnings = append(p.warnings, fmt.Sprintf("api.token_file: %s is readable by group or others (mode %04o); chmod 600 it", c.TokenFile, fi.Mode().Perm()))
		}
	}
	switch {
	case c.TokenEnv != "" && c.TokenFile != "":
		p.addf(deref(&r.TokenFile), "api.token_env and api.token_file", "set one, not both")
	case c.TokenEnv == "" && c.TokenFile == "":
		c.TokenEnv = DefaultTokenEnv
	}

	c.Timeout = p.duration(&r.Timeout, "api.timeout", DefaultTimeout, true, time.Hour, "60s")
	c.AnswerTimeout = p.duration(&r.AnswerTimeout, "api.answer_timeout", DefaultAnswerTimeout, true, 24*time.Hour, "30m")
	if c.AnswerTimeout < c.Timeout {
		p.addf(deref(&r.AnswerTimeout), "api.answer_timeout", "%s is shorter than api.timeout %s; it bounds a whole answer, each wait of which api.timeout bounds: give at least %s", c.AnswerTimeout, c.Timeout, c.Timeout)
	}
	c.Concurrency = p.integer(&r.Concurrency, "api.concurrency", DefaultConcurrency, 1, 32)
	c.TotalConcurrency = p.integer(&r.TotalConcurrency, "api.total_concurrency", max(DefaultTotalConcurrency, c.Concurrency), 1, 256)
	if c.TotalConcurrency < c.Concurrency {
		p.addf(deref(&r.TotalConcurrency), "api.total_concurrency", "%d is less than api.concurrency %d; it bounds the windows in flight over every organization, each of which may have api.concurrency", c.TotalConcurrency, c.Concurrency)
	}
	c.MaxRetries = p.integer(&r.MaxRetries, "api.max_retries", DefaultMaxRetries, 0, 50)
	c.ConnectRetries = p.integer(&r.ConnectRetries, "api.connect_retries", DefaultConnectRetries, 0, 50)
	c.TokenWarnBefore = DefaultTokenWarnBefore
	if s, ok := p.scalar(&r.TokenWarnBefore, "api.token_warn_before"); ok {
		d, ok := dayHours(s)
		switch {
		case !ok || d > 366*24*time.Hour:
			p.addf(deref(&r.TokenWarnBefore), "api.token_warn_before", "%q is not <n>d or <n>h from 0 up to a year (366d), e.g. 14d", s)
		default:
			c.TokenWarnBefore = d
		}
	}
	c.Paths = p.paths(&r.Paths)
}

// baseURL checks the interface's address by fetch's rule (the token goes
// there), naming the field and the line.
func (p *parser) baseURL(n *yaml.Node, field, s string) string {
	if _, err := tally.CheckBaseURL(s); err != nil {
		p.addf(deref(n), field, "%v", err)
		return s
	}
	return strings.TrimRight(strings.TrimSpace(s), "/")
}

func (p *parser) paths(n *yaml.Node) map[string]string { return p.pathsAt(n, "api.paths") }

// pathsAt reads a mapping of resource to path at field.
func (p *parser) pathsAt(n *yaml.Node, at string) map[string]string {
	n = deref(n)
	out := map[string]string{}
	if isNull(n) {
		return out
	}
	keys := make([]string, 0, len(tally.DefaultPaths))
	for k := range tally.DefaultPaths {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if n.Kind != yaml.MappingNode {
		p.addf(n, at, "must be a mapping of resource to path (resources: %s), not %s", strings.Join(keys, ", "), describe(n))
		return out
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := deref(n.Content[i]), n.Content[i+1]
		field := join(at, k.Value)
		def, known := tally.DefaultPaths[k.Value]
		if k.Kind != yaml.ScalarNode || !known {
			msg := fmt.Sprintf("unknown resource; known: %s", strings.Join(keys, ", "))
			if s := suggest(k.Value, keys); s != "" {
				msg += "; did you mean " + s + "?"
			}
			p.addf(k, field, "%s", msg)
			continue
		}
		if _, dup := out[k.Value]; dup {
			p.addf(k, field, "given twice")
			continue
		}
		s, ok := p.scalar(v, field)
		if !ok {
			if isNull(v) {
				p.addf(deref(v), field, "must be a path, e.g. %q", def)
			}
			continue
		}
		if err := tally.CheckPath(k.Value, s); err != nil {
			p.addf(deref(v), field, "%v", err)
			continue
		}
		out[k.Value] = s
	}
	return out
}

func (p *parser) usage(r *rawUsage, c *UsageConfig) {
	gs := p.text(&r.Granularity, "usage.granularity", string(DefaultGranularity))
	c.Granularity = DefaultGranularity
	if g := tally.Granularity(gs); g.Valid() {
		c.Granularity = g
	} else {
		p.addf(deref(&r.Granularity), "usage.granularity", "%q is not one of hour, day, week, month, year", gs)
	}

	s, ok := p.scalar(&r.Start, "usage.start")
	switch t, err := tally.ParseDate(s); {
	case (!ok && isNull(&r.Start)) || (ok && s == ""):
		p.addf(deref(&r.Start), "usage.start", "missing; set the first day to backfill as YYYY-MM-DD, e.g. 2026-01-01")
	case !ok: // not a single value: reported
	case err != nil:
		p.addf(deref(&r.Start), "usage.start", "%q is not a YYYY-MM-DD date, e.g. 2026-01-01", s)
	default:
		c.Start = t
	}

	c.Lookback = DefaultLookback
	if s, ok := p.scalar(&r.Lookback, "usage.lookback"); ok {
		d, ok := dayHours(s)
		switch {
		case !ok:
			p.addf(deref(&r.Lookback), "usage.lookback", "%q is not <n>d or <n>h with n ≥ 0, e.g. 7d, 36h, 0d", s)
		case d > 3660*24*time.Hour:
			p.addf(deref(&r.Lookback), "usage.lookback", "%q is longer than ten years (3660d); older data is a backfill: set usage.start", s)
		default:
			c.Lookback = d
		}
	}

	c.StaleAfter = DefaultStaleAfter
	if s, ok := p.scalar(&r.StaleAfter, "usage.stale_after"); ok {
		d, ok := dayHours(s)
		switch {
		case !ok:
			p.addf(deref(&r.StaleAfter), "usage.stale_after", "%q is not <n>d or <n>h, e.g. 2d, 36h", s)
		case d < MinStaleAfter || d > MaxStaleAfter:
			p.addf(deref(&r.StaleAfter), "usage.stale_after", "%q is outside 1d to 90d: the newest day holding usage is at least a day old once it is over, and data a quarter old is past warning", s)
		default:
			c.StaleAfter = d
		}
	}

	if s, ok := p.scalar(&r.Window, "usage.window"); ok {
		if w, err := tally.ParseWindowSize(s); err != nil {
			p.addf(deref(&r.Window), "usage.window", "%v", err)
		} else if err := tally.CheckWindowSize(c.Granularity, w); err != nil {
			p.addf(deref(&r.Window), "usage.window", "%v", err)
		} else {
			c.Window = w
		}
	}

	c.Format = DefaultFormat
	switch f := p.text(&r.Format, "usage.format", string(DefaultFormat)); tally.Format(f) {
	case tally.FormatJSON, tally.FormatCSV:
		c.Format = tally.Format(f)
	default:
		p.addf(deref(&r.Format), "usage.format", "%q is not one of json, csv", f)
	}
	c.ReportedDate = p.boolean(&r.ReportedDate, "usage.reported_date")
	c.ProjectNames = p.list(&r.ProjectNames, "usage.project_names", nil)
	c.PaymentMethodIDs = p.list(&r.PaymentMethodIDs, "usage.payment_method_ids", func(s string) string {
		if !uuidRE.MatchString(s) {
			return "is not a UUID such as 0b6f2a4e-5c1d-4e8f-9a3b-7c2d1e0f4a5b"
		}
		return ""
	})
	c.MeterNames = p.list(&r.MeterNames, "usage.meter_names", nil)
	if len(c.ProjectNames) > 0 && len(c.PaymentMethodIDs) > 0 {
		p.addf(deref(&r.PaymentMethodIDs), "usage.project_names and usage.payment_method_ids", "set one, not both: the interface refuses the two filters together")
	}
	switch c.Source = p.text(&r.Source, "usage.source", tally.SourceOrganization); c.Source {
	case tally.SourceOrganization:
	case tally.SourceProjects:
		if len(c.ProjectNames) == 0 && !p.grouped {
			p.addf(deref(&r.ProjectNames), "usage.project_names", "missing; usage.source projects reads each listed project's usage report, e.g. [newsroom, archive]")
		}
		if c.Granularity != tally.Day {
			p.addf(deref(&r.Granularity), "usage.granularity", "%q with usage.source projects: the per-project report gives days (differences of daily reads); use day", c.Granularity)
		}
		if len(c.PaymentMethodIDs) > 0 || len(c.MeterNames) > 0 || c.ReportedDate {
			p.addf(deref(&r.Source), "usage.source", "projects takes no payment_method_ids, meter_names or reported_date: the per-project report has no such filters")
		}
	default:
		p.addf(deref(&r.Source), "usage.source", "%q is not one of organization, projects", c.Source)
		c.Source = tally.SourceOrganization
	}
}

func (p *parser) store(r *rawStore, c *StoreConfig) {
	c.Path = p.path(p.text(&r.Path, "store.path", DefaultStorePath))
	if env := p.getenv(EnvDB); env != "" {
		// A path typed at a shell is relative to where it was typed.
		c.Path = filepath.Clean(env)
	}
}

func (p *parser) reports(r *rawReports, c *ReportsConfig) {
	c.Dir = p.path(p.text(&r.Dir, "reports.dir", DefaultReportsDir))
	c.Tolerance = DefaultTolerance
	if s, ok := p.scalar(&r.Tolerance, "reports.tolerance"); ok {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil || math.IsNaN(v) || v < 0 || v > 1 {
			p.addf(deref(&r.Tolerance), "reports.tolerance", "%q is not a fraction from 0 to 1, e.g. 0.005 for 0.5 %%", s)
		} else {
			c.Tolerance = v
		}
	}
	if s, ok := p.scalar(&r.CloseAfter, "reports.close_after"); ok && s != "" {
		d, ok := dayHours(s)
		switch {
		case !ok || d == 0:
			p.addf(deref(&r.CloseAfter), "reports.close_after", "%q is not <n>d or <n>h with n ≥ 1 (the time after a month's end at which the nightly job closes it), e.g. 5d; or \"\" to never close automatically", s)
		case d > 366*24*time.Hour:
			p.addf(deref(&r.CloseAfter), "reports.close_after", "%q is longer than a year (366d); a month is closed within a year of its end, or by hand with tally close", s)
		default:
			c.CloseAfter = d
		}
	}
	p.deliver(&r.Deliver, &c.Deliver)
	if isNull(&r.Months) {
		c.Months = slices.Clone(DefaultMonths)
		return
	}
	c.Months = p.list(&r.Months, "reports.months", func(s string) string {
		if !slices.Contains(DefaultMonths, s) {
			return "is not one of previous, current"
		}
		return ""
	})
}

var jobSteps = []string{"fetch", "report", "close", "deliver", "alerts", "export"}

func (p *parser) schedule(r *rawSchedule, c *ScheduleConfig) {
	c.LockWait = p.duration(&r.LockWait, "schedule.lock_wait", DefaultLockWait, false, 24*time.Hour, "10m")
	c.Grace = p.duration(&r.Grace, "schedule.grace", DefaultGrace, false, time.Hour, "30s")
	if r.Jobs == nil {
		c.Jobs = DefaultJobs()
		return
	}
	c.Jobs = []Job{}
	names := map[string]bool{}
	for i := range *r.Jobs {
		rj := &(*r.Jobs)[i]
		path := fmt.Sprintf("schedule.jobs[%d]", i)
		if p.dropped[path] {
			continue
		}
		j := Job{
			Name: p.text(&rj.Name, path+".name", ""),
			Cron: strings.TrimSpace(p.text(&rj.Cron, path+".cron", "")),
		}
		switch {
		case j.Name == "":
			p.addf(deref(&rj.Name), path+".name", "missing; give the job a name, e.g. nightly")
		case names[j.Name]:
			p.addf(deref(&rj.Name), path+".name", "%q is the name of another job; names must be unique", j.Name)
		}
		names[j.Name] = true
		if j.Cron == "" {
			p.addf(deref(&rj.Cron), path+".cron", `missing; give a cron spec, e.g. "CRON_TZ=UTC 30 2 * * *"`)
		} else if _, err := ParseCron(j.Cron); err != nil {
			p.addf(deref(&rj.Cron), path+".cron", "job %q: %v", j.Name, err)
		}
		j.Run = p.list(&rj.Run, path+".run", func(s string) string {
			if !slices.Contains(jobSteps, s) {
				return "is not one of " + strings.Join(jobSteps, ", ")
			}
			return ""
		})
		if run := deref(&rj.Run); isNull(run) || (run.Kind == yaml.SequenceNode && len(run.Content) == 0) {
			p.addf(run, path+".run", "missing; list the steps, e.g. [fetch, report]")
		}
		c.Jobs = append(c.Jobs, j)
	}
}

func (p *parser) export(r *rawExport, c *ExportConfig) {
	c.Dir = p.path(p.text(&r.Dir, "export.dir", DefaultExportDir))
	c.Format = ExportParquet
	switch f := p.text(&r.Format, "export.format", ExportParquet); f {
	case ExportParquet, ExportFOCUS:
		c.Format = f
	default:
		p.addf(deref(&r.Format), "export.format", "%q is not one of parquet, focus", f)
	}
	c.FOCUSCSV = p.boolean(&r.FOCUSCSV, "export.focus_csv")
	c.CSVRaw = p.boolean(&r.CSVRaw, "export.csv_raw")
}

// deliver reads reports.deliver: a folder, and/or a mail server.
func (p *parser) deliver(r *rawDeliver, c *DeliverConfig) {
	if s := p.text(&r.Dir, "reports.deliver.dir", ""); s != "" {
		c.Dir = p.path(s)
		if err := CheckDeliverDir(c.Dir); err != nil {
			p.addf(deref(&r.Dir), "reports.deliver.dir", "%q %v; give a folder Tally may write into (the deliver step copies finished workbooks there)", s, err)
		}
	}
	m := &r.SMTP
	if isNull(&m.Host) && isNull(&m.From) && isNull(&m.To) && isNull(&m.Port) {
		return
	}
	s := &SMTPConfig{
		Host:         p.text(&m.Host, "reports.deliver.smtp.host", ""),
		Security:     p.text(&m.Security, "reports.deliver.smtp.security", "starttls"),
		Username:     p.text(&m.Username, "reports.deliver.smtp.username", ""),
		PasswordEnv:  p.text(&m.PasswordEnv, "reports.deliver.smtp.password_env", ""),
		PasswordFile: p.text(&m.PasswordFile, "reports.deliver.smtp.password_file", ""),
		From:         p.text(&m.From, "reports.deliver.smtp.from", ""),
		Subject:      p.text(&m.Subject, "reports.deliver.smtp.subject", "Tally cost workbook {month}"),
	}
	if s.PasswordFile != "" {
		s.PasswordFile = p.path(s.PasswordFile)
	}
	if s.Host == "" {
		p.addf(deref(&m.Host), "reports.deliver.smtp.host", "missing; the mail server to send workbooks through, e.g. smtp.example.com")
	}
	if s.From == "" {
		p.addf(deref(&m.From), "reports.deliver.smtp.from", "missing; the sender address, e.g. tally@example.com")
	}
	if s.Security != "starttls" && s.Security != "tls" {
		p.addf(deref(&m.Security), "reports.deliver.smtp.security", "%q is not one of starttls (port 587), tls (implicit TLS, port 465)", s.Security)
	}
	def := 587
	if s.Security == "tls" {
		def = 465
	}
	s.Port = p.integer(&m.Port, "reports.deliver.smtp.port", def, 1, 65535)
	s.Timeout = p.duration(&m.Timeout, "reports.deliver.smtp.timeout", DefaultSMTPTimeout, true, time.Hour, "2m")
	if s.PasswordEnv != "" && s.PasswordFile != "" {
		p.addf(deref(&m.PasswordFile), "reports.deliver.smtp.password_env and password_file", "set one, not both")
	}
	if s.PasswordEnv != "" && !envNameRE.MatchString(s.PasswordEnv) {
		p.addf(deref(&m.PasswordEnv), "reports.deliver.smtp.password_env", "%q is not an environment variable name", s.PasswordEnv)
	}
	if s.Username != "" && s.PasswordEnv == "" && s.PasswordFile == "" {
		p.addf(deref(&m.Username), "reports.deliver.smtp.username", "is set but no password: set password_env or password_file (the password is never in the YAML)")
	}
	if isNull(&m.To) {
		p.addf(deref(&m.To), "reports.deliver.smtp.to", "missing; the recipients, e.g. [finance@example.com]")
	} else {
		s.To = p.list(&m.To, "reports.deliver.smtp.to", func(v string) string {
			if !strings.Contains(v, "@") {
				return "is not an e-mail address"
			}
			return ""
		})
	}
	c.SMTP = s
}

// dayHours reads the <n>d or <n>h durations of the config (lookback,
// close_after, token_warn_before); each key words its own limits.
func dayHours(s string) (time.Duration, bool) {
	m := lookRE.FindStringSubmatch(s)
	if m == nil {
		return 0, false
	}
	n, _ := strconv.Atoi(m[1])
	if m[2] == "d" {
		return time.Duration(n) * 24 * time.Hour, true
	}
	return time.Duration(n) * time.Hour, true
}
