// Package secret is the one redaction step every sink passes through: the
// log writer, the error a command prints, the error a run stores in
// runs.error (and so in the analysts' copy), the journal, alerts.last_error.
//
// Every secret the process holds (the API token, the SMTP password, a
// webhook's signing secret and the path and query of its address, any later
// *_env or *_file secret) is registered once, where it is read. Redact then
// removes it from any text in each form a peer may echo it: as it is, in
// another case, base64 (standard or URL alphabet, at any offset inside a
// longer base64 text such as an SMTP AUTH PLAIN string), percent-encoded
// and JSON-escaped.
//
// A Value holds a secret so it cannot be printed by accident: it formats
// as [redacted] under every verb, in JSON and in zerolog fields.
package secret

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"sort"
	"strings"
	"sync"
)

// Mask replaces every secret in redacted text.
const Mask = "[redacted]"

// minLen is the shortest text Redact looks for: a shorter secret (or a
// shorter derived form of one) would mask ordinary words and numbers all
// over the logs while hiding nothing worth hiding.
const minLen = 4

// minDerivedLen is the shortest encoded form (base64, percent) looked for.
const minDerivedLen = 6

// Value is a secret that never formats itself.
type Value struct{ s string }

// New registers s and returns it as a Value.
func New(s string) Value {
	Register(s)
	return Value{s}
}

// Reveal returns the secret, for the one place that must send it.
func (v Value) Reveal() string { return v.s }

// IsZero reports whether there is no secret: none configured, or a key
// whose secret is optional (an unsigned webhook) left out.
func (v Value) IsZero() bool { return v.s == "" }

func (Value) String() string               { return Mask }
func (Value) GoString() string             { return Mask }
func (Value) Format(f fmt.State, _ rune)   { io.WriteString(f, Mask) }
func (Value) MarshalJSON() ([]byte, error) { return []byte(`"` + Mask + `"`), nil }
func (Value) MarshalText() ([]byte, error) { return []byte(Mask), nil }

var (
	mu      sync.RWMutex
	secrets = map[string]bool{}
	needles []string // lower-cased forms, longest first
)

// Register adds secrets to those Redact removes. Surrounding space is
// ignored; empty and very short values are not registered.
func Register(ss ...string) {
	mu.Lock()
	defer mu.Unlock()
	changed := false
	for _, s := range ss {
		s = strings.TrimSpace(s)
		if len(s) < minLen || secrets[s] {
			continue
		}
		secrets[s] = true
		changed = true
	}
	if changed {
		rebuild()
	}
}

// RegisterURL registers the parts of an address that may carry a secret:
// its path, its query and each query value, and its user info. Its scheme
// and host are not secret (logs name a sink by them).
func RegisterURL(raw string) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil {
		Register(raw)
		return
	}
	var ss []string
	if p := strings.Trim(u.Path, "/"); p != "" {
		ss = append(ss, u.Path, u.EscapedPath())
		// The path without its slashes only where it cannot be a word:
		// a path /hook would otherwise turn every "webhook" of every
		// message into "web[redacted]".
		if strings.Contains(p, "/") || keyLike(p) {
			ss = append(ss, p)
		}
		// A receiver may quote one segment alone ("no such token
		// XXXX"): each that looks like a key, not a word, is a secret.
		for _, seg := range strings.Split(p, "/") {
			if keyLike(seg) {
				ss = append(ss, seg)
			}
		}
	}
	if u.RawQuery != "" {
		ss = append(ss, u.RawQuery)
		for _, vs := range u.Query() {
			ss = append(ss, vs...)
		}
	}
	if u.User != nil {
		ss = append(ss, u.User.String(), u.User.Username())
		if pw, ok := u.User.Password(); ok {
			ss = append(ss, pw)
		}
	}
	if u.Fragment != "" {
		ss = append(ss, u.Fragment)
	}
	Register(ss...)
}

// keyLike reports whether a path segment looks like a key rather than a
// word of the address ("services", "hooks"): 8 characters or more, and not
// only lower-case letters and dashes.
func keyLike(seg string) bool {
	if len(seg) < 8 {
		return false
	}
	for _, r := range seg {
		if (r < 'a' || r > 'z') && r != '-' {
			return true
		}
	}
	return false
}

// rebuild computes every form of every secret. Called with mu held.
func rebuild() {
	set := map[string]bool{}
	for s := range secrets {
		set[lower(s)] = true
		for _, f := range forms(s)[1:] {
			// A derived form shorter than this (the base64 core of a
			// short secret) would match unrelated text too often.
			if len(f) >= minDerivedLen {
				set[lower(f)] = true
			}
		}
	}
	needles = needles[:0]
	for n := range set {
		needles = append(needles, n)
	}
	// Longest first, so a longer form is masked whole before a shorter
	// form inside it leaves pieces of it behind.
	sort.Slice(needles, func(i, j int) bool {
		if len(needles[i]) != len(needles[j]) {
			return len(needles[i]) > len(needles[j])
		}
		return needles[i] < needles[j]
	})
}

// forms lists the ways a peer may echo s.
func forms(s string) []string {
	out := []string{s, url.QueryEscape(s), url.PathEscape(s), percentAll(s)}
	if b, err := json.Marshal(s); err == nil {
		out = append(out, string(b[1:len(b)-1]))
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding} {
		out = append(out, base64Cores(enc, []byte(s))...)
	}
	return out
}

// base64Cores returns, for each of the three offsets s can start at inside
// a longer base64 text, the run of characters that depend on s alone: what
// an AUTH PLAIN string ("\x00user\x00password", base64) shows of the
// password whatever the user name's length.
func base64Cores(enc *base64.Encoding, s []byte) []string {
	var out []string
	for k := 0; k < 3; k++ {
		buf := make([]byte, k+len(s))
		copy(buf[k:], s)
		text := enc.EncodeToString(buf)
		first := (8*k + 5) / 6       // first char whose 6 bits start at or after s
		last := (8*(k+len(s)))/6 - 1 // last char whose 6 bits end within s
		if last >= first && last < len(text) {
			out = append(out, text[first:last+1])
		}
		if k == 0 {
			out = append(out, text) // whole, with its padding
		}
	}
	return out
}

func percentAll(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		fmt.Fprintf(&b, "%%%02X", s[i])
	}
	return b.String()
}

// lower folds ASCII letters only, so a text and its folded copy have the
// same length and a match's offsets hold in both.
func lower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// Redact returns s with every form of every registered secret replaced by
// Mask, whatever its letter case.
func Redact(s string) string {
	mu.RLock()
	defer mu.RUnlock()
	if len(needles) == 0 || s == "" {
		return s
	}
	ls := lower(s)
	var b strings.Builder
	changed := false
	for i := 0; i < len(s); {
		hit := 0
		for _, n := range needles {
			if strings.HasPrefix(ls[i:], n) {
				hit = len(n)
				break
			}
		}
		if hit == 0 {
			// Jump to the next place any needle could start.
			next := len(s)
			for _, n := range needles {
				if j := strings.Index(ls[i+1:], n); j >= 0 && i+1+j < next {
					next = i + 1 + j
				}
			}
			b.WriteString(s[i:next])
			i = next
			continue
		}
		changed = true
		b.WriteString(Mask)
		i += hit
	}
	if !changed {
		return s
	}
	return b.String()
}

// Writer redacts every write to w. Log writers write one line per call,
// so a secret is never split between two writes.
func Writer(w io.Writer) io.Writer { return writer{w} }

type writer struct{ w io.Writer }

func (w writer) Write(p []byte) (int, error) {
	r := Redact(string(p))
	if _, err := io.WriteString(w.w, r); err != nil {
		return 0, err
	}
	return len(p), nil
}
