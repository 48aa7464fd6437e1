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

// ViewSelect returns the query that views/<name>.sql defines as the view
// name: the text after CREATE OR REPLACE VIEW name AS, without the final
// semicolon.
func ViewSelect(name string) (string, error) {
	b, err := fs.ReadFile(Views, "views/"+name+".sql")
	if err != nil {
		return "", fmt.Errorf("read view %s: %w", name, err)
	}
	text := string(b)
	m := createViewRE.FindStringSubmatchIndex(text)
	if m == nil || text[m[2]:m[3]] != name {
		return "", fmt.Errorf("read view %s: views/%s.sql does not start with CREATE OR REPLACE VIEW %s AS", name, name, name)
	}
	return strings.TrimRight(strings.TrimSpace(text[m[1]:]), ";"), nil
}

// Inline returns query with the named views defined in front of it as
// common table expressions, which take precedence over the database's
// own. The workbook and the export run their queries on the analysts'
// published copy, which an older Tally may have written without these
// views or with other definitions; inlined, this Tally's definition is
// the one that counts.
func Inline(query string, views ...string) (string, error) {
	var ctes []string
	for _, v := range views {
		body, err := ViewSelect(v)
		if err != nil {
			return "", err
		}
		ctes = append(ctes, v+" AS (\n"+body+"\n)")
	}
	if len(ctes) == 0 {
		return query, nil
	}
	head := "WITH " + strings.Join(ctes, ",\n")
	if loc := leadingWithRE.FindStringIndex(query); loc != nil {
		return head + ",\n" + query[loc[1]:], nil
	}
	return head + "\n" + query, nil
}
