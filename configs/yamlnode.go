package configs

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"unicode"

	"go.yaml.in/yaml/v3"
)

var nodeType = reflect.TypeOf(yaml.Node{})

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
