package configs

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"unicode"

	"go.yaml.in/yaml/v3"
)

// leafType is a value of the file that reads itself: at[T], list and
// mapping.
var leafType = reflect.TypeOf((*yaml.Unmarshaler)(nil)).Elem()

// shape is the keys of a struct of the file's shape: its yaml tags, in
// order.
type shape struct {
	keys  []string
	index map[string]int // key → field
}

// shapeOf reads a struct type's yaml tags, for the naming and the decode
// alike.
func shapeOf(t reflect.Type) *shape {
	s := &shape{index: map[string]int{}}
	for i := 0; i < t.NumField(); i++ {
		k, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ",")
		s.keys = append(s.keys, k)
		s.index[k] = i
	}
	return s
}

// name gives every leaf under out, a struct of the file's shape, its path
// below path; list items are named as they are decoded.
func name(out reflect.Value, path string) {
	for i, k := range shapeOf(out.Type()).keys {
		f := out.Field(i)
		switch l, ok := f.Addr().Interface().(interface{ name(string) }); {
		case ok:
			l.name(join(path, k))
		case f.Kind() == reflect.Struct:
			name(f, join(path, k))
		}
	}
}

// decode fills out, a struct of the file's shape, from the mapping n. It
// reports unknown keys, keys given twice and values of the wrong shape
// as it goes, so the rest of the file is still read and checked; leaves
// keep their node, so a value's problems are reported, with its line,
// where its section checks it. The yaml tags are the only list of keys.
// It returns false, reported, when n is not a mapping at all.
func (p *parser) decode(n *yaml.Node, out reflect.Value, path string) bool {
	n = deref(n)
	if isNull(n) {
		return true
	}
	sh := shapeOf(out.Type())
	keys := sh.keys
	where := "the top level"
	if path != "" {
		where = path
	}
	if n.Kind != yaml.MappingNode {
		p.addf(n, orTop(path), "must be a mapping with keys %s, not %s", strings.Join(keys, ", "), describe(n))
		return false
	}
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		tag := k.Value
		full := join(path, tag)
		f, known := sh.index[tag]
		switch {
		case k.Kind != yaml.ScalarNode:
			p.addf(k, orTop(path), "keys must be plain names, not %s", describe(k))
			continue
		case tag == "<<":
			p.addf(k, full, "merge keys are not supported; write the keys out")
			continue
		case !known:
			msg := fmt.Sprintf("unknown key; known keys in %s: %s", where, strings.Join(keys, ", "))
			if s := suggest(tag, keys); s != "" {
				msg += "; did you mean " + s + "?"
			}
			p.addf(k, full, "%s", msg)
			continue
		case seen[tag] > 0:
			p.addf(k, full, "given twice (first on line %d)", seen[tag])
			continue
		}
		seen[tag] = k.Line
		p.decodeValue(v, out.Field(f), full)
	}
	return true
}

// decodeValue fills the field out from v by the field's type.
func (p *parser) decodeValue(v *yaml.Node, out reflect.Value, path string) {
	ft := out.Type()
	switch {
	case reflect.PointerTo(ft).Implements(leafType):
		// The leaves' reading never fails: a value that is not a T is
		// reported where its section checks it.
		_ = out.Addr().Interface().(yaml.Unmarshaler).UnmarshalYAML(v)
	case ft.Kind() == reflect.Struct:
		p.decode(v, out, path)
	case ft.Kind() == reflect.Pointer && ft.Elem().Kind() == reflect.Slice:
		d := deref(v)
		if isNull(d) {
			return
		}
		if d.Kind != yaml.SequenceNode {
			p.addf(d, path, "must be a list, not %s", describe(d))
			return
		}
		items := reflect.MakeSlice(ft.Elem(), len(d.Content), len(d.Content))
		for i, item := range d.Content {
			ip := fmt.Sprintf("%s[%d]", path, i)
			name(items.Index(i), ip)
			// An item of the wrong shape keeps its place, so later items
			// keep their index in messages, but not its value; so does a
			// null one (a stray "-"), which, as yaml reads a list, is no
			// entry and no problem.
			switch {
			case isNull(item):
				p.blank[ip] = true
			case !p.decode(item, items.Index(i), ip):
				p.dropped[ip] = true
			}
		}
		ptr := reflect.New(ft.Elem())
		ptr.Elem().Set(items)
		out.Set(ptr)
	default:
		panic("configs: no decode for field type " + ft.String())
	}
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
