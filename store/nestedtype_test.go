package store

import (
	"fmt"
	"testing"
)

func TestNestedTypeNames(t *testing.T) {
	for _, c := range []struct{ typ, want string }{
		{`DATE[]`, `elem DATE`},
		{`DECIMAL(38,12)[3]`, `elem DECIMAL(38,12)`},
		{`MAP(VARCHAR, DECIMAL(38,12))`, `map VARCHAR → DECIMAL(38,12)`},
		{`MAP(VARCHAR, STRUCT("a, b" DATE))[]`, `elem MAP(VARCHAR, STRUCT("a, b" DATE))`},
		{`STRUCT("a, b" DATE, "say ""hi""" MAP(INTEGER, DOUBLE[]), plain TIME)`, `struct [{a, b DATE} {say "hi" MAP(INTEGER, DOUBLE[])} {plain TIME}]`},
		{`VARCHAR`, `scalar`},
	} {
		got := "scalar"
		switch {
		case elemType(c.typ) != "":
			got = "elem " + elemType(c.typ)
		case structFields(c.typ) != nil:
			got = fmt.Sprintf("struct %v", structFields(c.typ))
		default:
			if k, v := mapTypes(c.typ); k != "" {
				got = "map " + k + " → " + v
			}
		}
		if got != c.want {
			t.Errorf("%s: %s, want %s", c.typ, got, c.want)
		}
	}
}
