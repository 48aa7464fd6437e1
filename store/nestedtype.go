package store

import (
	"regexp"
	"strings"
)

// A nested DuckDB type name (DatabaseTypeName of a LIST, STRUCT or MAP
// column) names its parts' types: STRUCT("at" DATE, "parts" DOUBLE[]),
// MAP(VARCHAR, DECIMAL(38,12)). The printers read them from it, so a DATE
// inside a STRUCT prints as a date, and a STRUCT's fields in their order.

var arraySuffix = regexp.MustCompile(`\[\d*\]$`)

// elemType is the element type of a LIST or ARRAY type name, "" if typ is
// none.
func elemType(typ string) string {
	if loc := arraySuffix.FindStringIndex(typ); loc != nil {
		return strings.TrimSpace(typ[:loc[0]])
	}
	return ""
}

// mapTypes are the key and value types of a MAP type name.
func mapTypes(typ string) (key, val string) {
	inner, ok := typeArgs(typ, "MAP")
	if !ok {
		return "", ""
	}
	parts := splitTop(inner)
	if len(parts) != 2 {
		return "", ""
	}
	return parts[0], parts[1]
}

// structField is one field of a STRUCT type name.
type structField struct{ name, typ string }

// structFields are the fields of a STRUCT type name, in order; nil if typ
// is not one.
func structFields(typ string) []structField {
	inner, ok := typeArgs(typ, "STRUCT")
	if !ok {
		return nil
	}
	var out []structField
	for _, p := range splitTop(inner) {
		var name, rest string
		if strings.HasPrefix(p, `"`) {
			// A quoted name: "" inside stands for one quote.
			i := 1
			for ; i < len(p); i++ {
				if p[i] == '"' {
					if i+1 < len(p) && p[i+1] == '"' {
						i++
						continue
					}
					break
				}
			}
			if i >= len(p) {
				return nil
			}
			name, rest = strings.ReplaceAll(p[1:i], `""`, `"`), p[i+1:]
		} else {
			var found bool
			name, rest, found = strings.Cut(p, " ")
			if !found {
				return nil
			}
		}
		out = append(out, structField{name: name, typ: strings.TrimSpace(rest)})
	}
	return out
}

// typeArgs is what is between the parentheses of KIND(…), when typ is
// that and not a list of it.
func typeArgs(typ, kind string) (string, bool) {
	typ = strings.TrimSpace(typ)
	if !strings.HasPrefix(typ, kind+"(") || !strings.HasSuffix(typ, ")") || elemType(typ) != "" {
		return "", false
	}
	return typ[len(kind)+1 : len(typ)-1], true
}

// splitTop splits s at the commas outside parentheses, brackets and
// quotes.
func splitTop(s string) []string {
	var out []string
	depth, quoted, start := 0, false, 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"':
			quoted = !quoted
		case quoted:
		case c == '(' || c == '[':
			depth++
		case c == ')' || c == ']':
			depth--
		case c == ',' && depth == 0:
			out = append(out, strings.TrimSpace(s[start:i]))
			start = i + 1
		}
	}
	return append(out, strings.TrimSpace(s[start:]))
}
