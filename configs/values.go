package configs

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

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
