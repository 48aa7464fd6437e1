package configs

import (
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/tally-dev/tally"
)

// at is one value of the file, read as a T as it is decoded. Its text
// and node are kept, so the section that checks it names the value as
// written and its line, and a value of the wrong type does not hide the
// problems of the others.
type at[T any] struct {
	key
	V  T      // the value, when ok
	S  string // the text as written, when a single value
	ok bool   // S reads as a T
}

// key is where a value is in the file: its node, and its path
// (api.timeout, budgets[0].name), which every message about it names. The
// decode names every key of the file's shape, given or not, so a key is
// written once, in its yaml tag.
type key struct {
	n    *yaml.Node // aliases followed; nil when the key is left out
	path string
}

func (k *key) name(path string) { k.path = path }

// given reports whether the key is in the file with a value.
func (k key) given() bool { return !isNull(k.n) }

// mapping is a mapping whose keys are data (resources, cost centres), not
// the file's keys: its section reads them.
type mapping struct{ key }

func (m *mapping) UnmarshalYAML(n *yaml.Node) error {
	m.n = deref(n)
	return nil
}

// The types of the file's values that are written otherwise than Go
// reads their type; each reads its text itself.
type (
	// span is a duration written <n>d or <n>h (lookback, stale_after,
	// close_after, token_warn_before); each key words its own limits.
	span  time.Duration
	date  time.Time // YYYY-MM-DD, midnight UTC
	month time.Time // YYYY-MM
)

func (s *span) read(text string) error {
	d, ok := dayHours(text)
	if !ok {
		return errors.New("not <n>d or <n>h")
	}
	*s = span(d)
	return nil
}

func (d *date) read(text string) error {
	t, err := tally.ParseDate(text)
	*d = date(t)
	return err
}

func (m *month) read(text string) error {
	t, err := time.Parse("2006-01", text)
	*m = month(t)
	return err
}

// UnmarshalYAML never fails: a value that is not a T is reported, with
// its text, where its section checks it, so one wrong value does not stop
// the others being checked.
func (a *at[T]) UnmarshalYAML(n *yaml.Node) error {
	a.n = deref(n)
	if isNull(a.n) || a.n.Kind != yaml.ScalarNode {
		return nil
	}
	a.S = a.n.Value
	var err error
	switch v := any(&a.V).(type) {
	case *string:
		*v = a.S
	case *int:
		*v, err = strconv.Atoi(a.S)
	case *bool:
		err = errors.New("not true or false")
		if a.n.ShortTag() == "!!bool" {
			err = a.n.Decode(v)
		}
	case *time.Duration:
		*v, err = time.ParseDuration(a.S)
	case *float64:
		*v, err = strconv.ParseFloat(a.S, 64)
	case *tally.Decimal:
		*v, err = tally.ParseDecimal(a.S)
	case interface{ read(string) error }:
		err = v.read(a.S)
	default:
		panic(fmt.Sprintf("configs: no reading of %T", a.V))
	}
	a.ok = err == nil
	return nil
}

// list is a list of texts in the file, each kept with its node.
type list struct {
	key
	Items []at[string]
}

func (l *list) UnmarshalYAML(n *yaml.Node) error {
	l.n = deref(n)
	if isNull(l.n) || l.n.Kind != yaml.SequenceNode {
		return nil
	}
	l.Items = make([]at[string], len(l.n.Content))
	for i, item := range l.n.Content {
		_ = l.Items[i].UnmarshalYAML(item)
	}
	return nil
}

// has reports a value that is not a single value, and says whether k
// holds one.
func (p *parser) has(k key) bool { return p.single(k.n, k.path) }

// single reports a value at path that is not a single value, and says
// whether n is one.
func (p *parser) single(n *yaml.Node, path string) bool {
	if isNull(n) {
		return false
	}
	if n.Kind != yaml.ScalarNode {
		p.addf(n, path, "must be a single value, not %s", describe(n))
		return false
	}
	return true
}

// notEmpty refuses a key given as "" (or blanks), which text would
// otherwise read as left out: a value written down and then emptied is a
// mistake to show, not a default to take silently.
// It reports whether it refused one.
func (p *parser) notEmpty(a at[string], allowed string) bool {
	// The caller's text has reported a value that is not a scalar.
	if a.given() && a.n.Kind == yaml.ScalarNode && strings.TrimSpace(a.S) == "" {
		p.bad(a.key, "%q is empty; %s", a.S, allowed)
		return true
	}
	return false
}

// text returns a string, or def when it is left out or empty.
func (p *parser) text(a at[string], def string) string {
	if p.has(a.key) && a.V != "" {
		return a.V
	}
	return def
}

// oneOf reads a key that takes one of allowed; def when left out or empty.
func oneOf[S ~string](p *parser, a at[string], def S, allowed ...S) S {
	s := S(p.text(a, string(def)))
	if slices.Contains(allowed, s) {
		return s
	}
	names := make([]string, len(allowed))
	for i, v := range allowed {
		names[i] = string(v)
	}
	p.bad(a.key, "%q is not one of %s", string(s), strings.Join(names, ", "))
	return def
}

func (p *parser) integer(a at[int], def, lo, hi int) int {
	if !p.has(a.key) {
		return def
	}
	if !a.ok || a.V < lo || a.V > hi {
		p.bad(a.key, "%q is not a whole number from %d to %d", a.S, lo, hi)
		return def
	}
	return a.V
}

// duration reads a Go duration from 0 (or above 0 when positive) to hi.
func (p *parser) duration(a at[time.Duration], def time.Duration, positive bool, hi time.Duration, example string) time.Duration {
	if !p.has(a.key) || a.S == "" {
		return def
	}
	if d := a.V; !a.ok || d < 0 || (positive && d == 0) || d > hi {
		lo := "from 0"
		if positive {
			lo = "above 0 and"
		}
		p.bad(a.key, "%q is not a duration %s up to %s, e.g. %s", a.S, lo, fmtDuration(hi), example)
		return def
	}
	return a.V
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

func (p *parser) boolean(a at[bool]) bool {
	if !p.has(a.key) {
		return false
	}
	if !a.ok {
		p.bad(a.key, "%q is not true or false", a.S)
	}
	return a.V
}

// list returns a list of strings; nil when left out. Items must be
// non-empty and distinct (a repeated filter would change the query's scope
// without changing its rows); check, when set, says what else is wrong with
// an item.
func (p *parser) list(l list, check func(string) string) []string {
	if !l.given() {
		return nil
	}
	if l.n.Kind != yaml.SequenceNode {
		p.bad(l.key, "must be a list, not %s", describe(l.n))
		return nil
	}
	var out []string
	seen := map[string]bool{}
	for i, item := range l.Items {
		ip := fmt.Sprintf("%s[%d]", l.path, i)
		s := item.S
		switch ok := p.single(item.n, ip); {
		case !ok && isNull(item.n):
			p.addf(item.n, ip, "must not be empty")
		case !ok:
		case strings.TrimSpace(s) == "":
			p.addf(item.n, ip, "%q must not be empty", s)
		case seen[s]:
			p.addf(item.n, ip, "%q is listed twice", s)
		case check != nil && check(s) != "":
			p.addf(item.n, ip, "%q %s", s, check(s))
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
