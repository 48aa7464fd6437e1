package configs

import (
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/tally-dev/tally"
)

type rawAPI struct {
	BaseURL          at[string]        `yaml:"base_url"`
	TokenEnv         at[string]        `yaml:"token_env"`
	TokenFile        at[string]        `yaml:"token_file"`
	Timeout          at[time.Duration] `yaml:"timeout"`
	AnswerTimeout    at[time.Duration] `yaml:"answer_timeout"`
	Concurrency      at[int]           `yaml:"concurrency"`
	TotalConcurrency at[int]           `yaml:"total_concurrency"`
	MaxRetries       at[int]           `yaml:"max_retries"`
	ConnectRetries   at[int]           `yaml:"connect_retries"`
	TokenWarnBefore  at[span]          `yaml:"token_warn_before"`
	// Paths' keys are resources, checked against tally.DefaultPaths.
	Paths mapping `yaml:"paths"`
}

// api reads api: the interface's address, the token's source and how
// hard to press the interface.
func (p *parser) api(r *rawAPI, c *APIConfig) {
	c.BaseURL = p.text(r.BaseURL, DefaultBaseURL)
	if p.notEmpty(r.BaseURL, "leave the key out for the vendor's "+DefaultBaseURL+", or give the interface's https:// address") {
		c.BaseURL = DefaultBaseURL // reported; the rest is checked as if left out
	}
	field, from := "api.base_url", r.BaseURL.n
	if env := p.getenv(EnvBaseURL); env != "" {
		c.BaseURL, field, from = env, "api.base_url (from "+EnvBaseURL+")", nil
	}
	c.BaseURL = p.baseURL(from, field, c.BaseURL)

	c.TokenEnv, c.TokenFile = p.tokenKeys(r.TokenEnv, r.TokenFile, "api")
	if c.TokenEnv == "" && c.TokenFile == "" {
		c.TokenEnv = DefaultTokenEnv
	}
	p.apiLimits(r, c)
	c.Paths = p.paths(r.Paths)
}

// tokenKeys reads where a token comes from, field.token_env or
// field.token_file, refusing both; the caller says what neither means.
func (p *parser) tokenKeys(envKey, fileKey at[string], field string) (env, file string) {
	env = p.text(envKey, "")
	if env != "" && !envNameRE.MatchString(env) {
		p.bad(envKey.key, "%q is not an environment variable name (letters, digits and _, not starting with a digit)", env)
	}
	if f := p.text(fileKey, ""); f != "" {
		file = p.path(f)
		if fi, err := os.Stat(file); err == nil && fi.Mode().Perm()&0o044 != 0 {
			p.warnings = append(p.warnings, fmt.Sprintf("%s.token_file: %s is readable by group or others (mode %04o); chmod 600 it", field, file, fi.Mode().Perm()))
		}
	}
	if env != "" && file != "" {
		p.addf(fileKey.n, envKey.path+" and "+fileKey.path, "set one, not both")
	}
	return env, file
}

// apiLimits reads the api: keys that bound waits, requests in flight and
// retries, and the token's warning.
func (p *parser) apiLimits(r *rawAPI, c *APIConfig) {
	c.Timeout = p.duration(r.Timeout, DefaultTimeout, true, time.Hour, "60s")
	c.AnswerTimeout = p.duration(r.AnswerTimeout, DefaultAnswerTimeout, true, 24*time.Hour, "30m")
	if c.AnswerTimeout < c.Timeout {
		p.bad(r.AnswerTimeout.key, "%s is shorter than api.timeout %s; it bounds a whole answer, each wait of which api.timeout bounds: give at least %s", c.AnswerTimeout, c.Timeout, c.Timeout)
	}
	c.Concurrency = p.integer(r.Concurrency, DefaultConcurrency, 1, 32)
	c.TotalConcurrency = p.integer(r.TotalConcurrency, max(DefaultTotalConcurrency, c.Concurrency), 1, 256)
	if c.TotalConcurrency < c.Concurrency {
		p.bad(r.TotalConcurrency.key, "%d is less than api.concurrency %d; it bounds the windows in flight over every organization, each of which may have api.concurrency", c.TotalConcurrency, c.Concurrency)
	}
	c.MaxRetries = p.integer(r.MaxRetries, DefaultMaxRetries, 0, 50)
	c.ConnectRetries = p.integer(r.ConnectRetries, DefaultConnectRetries, 0, 50)
	c.TokenWarnBefore = DefaultTokenWarnBefore
	if w := r.TokenWarnBefore; p.has(w.key) {
		if d := time.Duration(w.V); !w.ok || d > 366*24*time.Hour {
			p.bad(w.key, "%q is not <n>d or <n>h from 0 up to a year (366d), e.g. 14d", w.S)
		} else {
			c.TokenWarnBefore = d
		}
	}
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

// paths reads a mapping of resource to path.
func (p *parser) paths(m mapping) map[string]string {
	n, where := m.n, m.path
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
		p.addf(n, where, "must be a mapping of resource to path (resources: %s), not %s", strings.Join(keys, ", "), describe(n))
		return out
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := deref(n.Content[i]), n.Content[i+1]
		field := join(where, k.Value)
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
		if !p.single(deref(v), field) {
			if isNull(v) {
				p.addf(deref(v), field, "must be a path, e.g. %q", def)
			}
			continue
		}
		s := deref(v).Value
		if err := tally.CheckPath(k.Value, s); err != nil {
			p.addf(deref(v), field, "%v", err)
			continue
		}
		out[k.Value] = s
	}
	return out
}
