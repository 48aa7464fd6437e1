package sql

import (
	"fmt"
	"io/fs"
	"regexp"
	"strings"
)

var (
	createViewRE  = regexp.MustCompile(`(?is)^\s*(?:--[^\n]*\n\s*)*CREATE\s+OR\s+REPLACE\s+VIEW\s+(\w+)\s+AS\s+`)
	leadingWithRE = regexp.MustCompile(`(?is)^\s*(?:--[^\n]*\n\s*)*WITH\s+`)
)

// CTE is a named query that another query reads as a common table
// expression.
type CTE struct {
	Name  string
	Query string
}

// View returns the view name as views/name.sql defines it: the query after
// CREATE OR REPLACE VIEW name AS, without the final semicolon.
func View(name string) (CTE, error) {
	b, err := fs.ReadFile(Views, "views/"+name+".sql")
	if err != nil {
		return CTE{}, fmt.Errorf("read view %s: %w", name, err)
	}
	text := string(b)
	m := createViewRE.FindStringSubmatchIndex(text)
	if m == nil || text[m[2]:m[3]] != name {
		return CTE{}, fmt.Errorf("read view %s: views/%s.sql does not start with CREATE OR REPLACE VIEW %s AS", name, name, name)
	}
	return CTE{Name: name, Query: strings.TrimRight(strings.TrimSpace(text[m[1]:]), ";")}, nil
}

// With returns query with ctes defined in front of it, in order, so that
// each may read those before it; a CTE takes precedence over a table or
// view of its name. Each is NOT MATERIALIZED: DuckDB runs it where it is
// read, under the reader's filters, rather than holding its rows.
func With(query string, ctes ...CTE) string {
	if len(ctes) == 0 {
		return query
	}
	defs := make([]string, len(ctes))
	for i, c := range ctes {
		defs[i] = c.Name + " AS NOT MATERIALIZED (\n" + c.Query + "\n)"
	}
	head := "WITH " + strings.Join(defs, ",\n")
	if loc := leadingWithRE.FindStringIndex(query); loc != nil {
		return head + ",\n" + query[loc[1]:]
	}
	return head + "\n" + query
}

// Inline returns query with the named views (see View) defined in front
// of it (see With). The workbook and the export run their queries on the
// analysts' published copy, which an older Tally may have written without
// these views or with other definitions; inlined, this Tally's definition
// is the one that counts.
func Inline(query string, views ...string) (string, error) {
	ctes := make([]CTE, len(views))
	for i, v := range views {
		c, err := View(v)
		if err != nil {
			return "", err
		}
		ctes[i] = c
	}
	return With(query, ctes...), nil
}
