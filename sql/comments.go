package sql

import (
	"regexp"
	"strings"
)

// Comment is a description the SQL files carry, for DuckDB's COMMENT ON:
// Column is empty for the table or view itself.
type Comment struct {
	Kind   string // "TABLE" or "VIEW"
	Object string
	Column string
	Text   string
}

// alterAddRE is a column a migration adds: ALTER TABLE t ADD COLUMN c …
var alterAddRE = regexp.MustCompile(`(?i)^\s*ALTER\s+TABLE\s+("?[A-Za-z_][A-Za-z0-9_]*"?)\s+ADD\s+COLUMN\s+("?[A-Za-z_][A-Za-z0-9_]*"?)`)

var createRE = regexp.MustCompile(`(?i)^\s*CREATE\s+(?:OR\s+REPLACE\s+)?(TABLE|VIEW)\s+(?:IF\s+NOT\s+EXISTS\s+)?("?[A-Za-z_][A-Za-z0-9_]*"?)`)

// asRE finds the name a select-list line gives its column: "… AS name,".
var asRE = regexp.MustCompile(`(?i)\bAS\s+("?[A-Za-z_][A-Za-z0-9_]*"?)\s*,?\s*$`)

// identRE is a select-list line that is a column itself: "name," or
// "u.name,".
var identRE = regexp.MustCompile(`^(?:[A-Za-z_][A-Za-z0-9_]*\.)?("?[A-Za-z_][A-Za-z0-9_]*"?)\s*,?\s*$`)

// Comments reads the descriptions text gives its tables and views, so that
// the SQL files stay their one source and DuckDB's catalog (the DuckDB CLI,
// DBeaver, Python) shows the same: the comment block right above a CREATE
// TABLE or CREATE VIEW describes it (a leading "name:" is dropped), and a
// comment at the end of a column's line describes that column, for a table
// the line's first word, for a view the name the line selects as.
func Comments(text string) []Comment {
	var out []Comment
	var block []string // the comment lines just read
	var cur *Comment   // the object whose body is being read
	for _, line := range strings.Split(text, "\n") {
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "--") {
			block = append(block, strings.TrimSpace(strings.TrimPrefix(trimmed, "--")))
			continue
		}
		if m := alterAddRE.FindStringSubmatch(line); m != nil {
			if _, note, ok := strings.Cut(line, "--"); ok && strings.TrimSpace(note) != "" {
				out = append(out, Comment{Kind: "TABLE", Object: strings.Trim(m[1], `"`), Column: strings.Trim(m[2], `"`), Text: strings.TrimSpace(note)})
			}
			block = nil
			continue
		}
		if m := createRE.FindStringSubmatch(line); m != nil {
			name := strings.Trim(m[2], `"`)
			cur = &Comment{Kind: strings.ToUpper(m[1]), Object: name}
			if desc := describe(block, name); desc != "" {
				out = append(out, Comment{Kind: cur.Kind, Object: name, Text: desc})
			}
			block = nil
			continue
		}
		block = nil // a comment describes only what directly follows it
		if cur == nil {
			continue
		}
		code, note, ok := strings.Cut(line, "--")
		if ok && strings.TrimSpace(note) != "" {
			if col := columnOf(cur.Kind, code); col != "" {
				out = append(out, Comment{Kind: cur.Kind, Object: cur.Object, Column: col, Text: strings.TrimSpace(note)})
			}
		}
		if strings.Contains(code, ";") {
			cur = nil
		}
	}
	return out
}

// describe joins a comment block into one paragraph, up to its first blank
// comment line (what follows is for the SQL's readers).
func describe(block []string, name string) string {
	var parts []string
	for _, l := range block {
		if l == "" {
			if len(parts) > 0 {
				break
			}
			continue
		}
		parts = append(parts, l)
	}
	d := strings.Join(parts, " ")
	return strings.TrimSpace(strings.TrimPrefix(d, name+":"))
}

func columnOf(kind, code string) string {
	code = strings.TrimSpace(code)
	if kind == "TABLE" {
		f := strings.Fields(code)
		if len(f) < 2 || strings.EqualFold(f[0], "PRIMARY") || strings.EqualFold(f[0], "UNIQUE") {
			return ""
		}
		return strings.Trim(f[0], `"`)
	}
	code = strings.TrimPrefix(code, "SELECT ")
	code = strings.TrimSpace(strings.TrimPrefix(code, "select "))
	if m := asRE.FindStringSubmatch(code); m != nil {
		return strings.Trim(m[1], `"`)
	}
	if m := identRE.FindStringSubmatch(code); m != nil {
		return strings.Trim(m[1], `"`)
	}
	return ""
}
