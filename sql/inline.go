package sql

import (
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"sort"
	"strings"
	"sync"
)

var (
	createViewRE  = regexp.MustCompile(`(?is)^\s*(?:--[^\n]*\n\s*)*CREATE\s+OR\s+REPLACE\s+VIEW\s+(\w+)\s+AS\s+`)
	leadingWithRE = regexp.MustCompile(`(?is)^\s*(?:--[^\n]*\n\s*)*WITH\s+`)
	commentRE     = regexp.MustCompile(`--[^\n]*`)
	wordRE        = regexp.MustCompile(`\w+`)
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

// Inline returns query with the views of views/ that it reads, directly or
// through other views, defined in front of it (see With), each after the
// views it reads. The workbook and the export run their queries on the
// analysts' published copy, which an older Tally may have written without
// these views or with other definitions; inlined, this Tally's definition
// is the one that counts.
//
// A rule that needs no more than that is a macro (macros/, which every
// connection defines for itself, TEMP, so this Tally's counts on any
// copy), and a view whose rows a caller narrows by arguments a table macro
// the view reads with NULLs (usage_coverage_of). What still comes through
// here needs what neither gives: a view's definition chosen per database
// once it is open (the kept tables that stand in for usage_day_cost,
// anomaly_baselines and the meters' months, InlineDefined), a condition on
// a table that every view above it must read under so that DuckDB takes it
// to the table's scan (InlineWhere), or a view read over rows the query
// provides in place of another view (InlineProvided). A view takes no
// parameters, and a table macro takes none that is a relation.
func Inline(query string) (string, error) {
	return InlineWhere(query, nil)
}

// InlineWhere is Inline with some views or tables read under a condition:
// for each view or table named in where, only its rows meeting the
// condition (SQL over its columns, with parameters) are seen by the query
// and by every view that reads it. A table's condition is put in front of
// every view, as a common table expression of the table's name that reads
// the table itself (main.name): a condition on the table's own columns
// (usage.date >= …) is what DuckDB takes to the table's scan and its
// zone maps, which a condition on a view's derived column is not. A
// monthly figure reads the month and the days its baseline needs, not the
// years before.
func InlineWhere(query string, where map[string]string) (string, error) {
	return inline(query, where, nil, nil)
}

// InlineDefined is InlineWhere with some views defined otherwise: for each
// view named in defs, the query given (which may read views and tables,
// and take parameters) stands in for the view's file, for the query and
// every view that reads it. The workbook reads the report month's meters
// and skus this way, from the usage table's own columns (which DuckDB
// takes to the scan) rather than from days derived from them (which it
// does not), so a month's workbook reads that month, not the history.
func InlineDefined(query string, where, defs map[string]string) (string, error) {
	return inline(query, where, nil, defs)
}

// InlineProvided is Inline for a query that defines some views itself, as
// common table expressions in front of it (a workbook's month in place of
// usage_finest, say): those are not inlined, nor the views only they read.
// The views it does inline must not read one it provides.
func InlineProvided(query string, provided ...string) (string, error) {
	skip := map[string]bool{}
	for _, v := range provided {
		skip[v] = true
	}
	return inline(query, nil, skip, nil)
}

func inline(query string, where map[string]string, provided map[string]bool, defs map[string]string) (string, error) {
	texts, err := embeddedViews()
	if err != nil {
		return "", err
	}
	if len(defs) > 0 {
		own := make(map[string]string, len(texts))
		for v, t := range texts {
			own[v] = t
		}
		for v, q := range defs {
			if _, ok := own[v]; !ok {
				return "", fmt.Errorf("define view %s: there is no such view", v)
			}
			own[v] = "CREATE OR REPLACE VIEW " + v + " AS\n" + q
		}
		texts = own
	}
	var roots []string
	for _, v := range reads(query, texts) {
		if !provided[v] {
			roots = append(roots, v)
		}
	}
	names, err := order(texts, roots)
	if err != nil {
		return "", err
	}
	var tables []CTE
	for name, cond := range where {
		if _, isView := texts[name]; !isView {
			tables = append(tables, CTE{Name: name, Query: "SELECT * FROM main." + name + " WHERE " + cond})
		}
	}
	sort.Slice(tables, func(i, j int) bool { return tables[i].Name < tables[j].Name })
	ctes := make([]CTE, len(names))
	for i, v := range names {
		if q, ok := defs[v]; ok {
			ctes[i] = CTE{Name: v, Query: q}
		} else if ctes[i], err = View(v); err != nil {
			return "", err
		}
		if cond, ok := where[v]; ok {
			ctes[i].Query = "SELECT * FROM (\n" + ctes[i].Query + "\n) WHERE " + cond
		}
	}
	ctes = append(tables, ctes...)
	return With(query, ctes...), nil
}

var embeddedViews = sync.OnceValues(func() (map[string]string, error) {
	files, err := fs.Glob(Views, "views/*.sql")
	if err != nil {
		return nil, err
	}
	texts := make(map[string]string, len(files))
	for _, f := range files {
		b, err := fs.ReadFile(Views, f)
		if err != nil {
			return nil, err
		}
		texts[strings.TrimSuffix(path.Base(f), ".sql")] = string(b)
	}
	return texts, nil
})

// ViewOrder orders the views of texts (name → its CREATE VIEW statement)
// so that each comes after the views its SQL, comments aside, names, and
// otherwise by name: the order to create them in, as DuckDB binds a view
// when it is created.
func ViewOrder(texts map[string]string) ([]string, error) {
	all := make([]string, 0, len(texts))
	for v := range texts {
		all = append(all, v)
	}
	sort.Strings(all)
	return order(texts, all)
}

// reads lists, by name, the views of texts that the SQL text names,
// comments aside.
func reads(text string, texts map[string]string) []string {
	words := map[string]bool{}
	for _, w := range wordRE.FindAllString(commentRE.ReplaceAllString(text, ""), -1) {
		words[w] = true
	}
	var out []string
	for v := range texts {
		if words[v] {
			out = append(out, v)
		}
	}
	sort.Strings(out)
	return out
}

// order returns roots and the views of texts they read, each after those
// it reads, otherwise in the order of roots. A cycle is an error naming it.
func order(texts map[string]string, roots []string) ([]string, error) {
	var out []string
	state := map[string]int{} // 1: being placed, 2: placed
	var place func(v string, path []string) error
	place = func(v string, path []string) error {
		switch state[v] {
		case 2:
			return nil
		case 1:
			return fmt.Errorf("views read each other in a cycle: %s", strings.Join(append(path, v), " → "))
		}
		state[v] = 1
		for _, w := range reads(texts[v], texts) {
			if w == v {
				continue // its own name, in CREATE … VIEW v
			}
			if err := place(w, append(path, v)); err != nil {
				return err
			}
		}
		state[v] = 2
		out = append(out, v)
		return nil
	}
	for _, v := range roots {
		if err := place(v, nil); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Schema migration 0010 names the store's existing organization with
// {{organization}} and {{organization_id}}: the store fills them in with
// the organization its rows belong to. SchemaText fills them with org and
// id (id "" for NULL) as SQL literals; a fresh database may give any.
// Literals, not bound parameters: they are the DEFAULT of the columns the
// migration adds, which DDL takes as a constant.
func SchemaText(text, org, id string) string {
	lit := func(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
	idText := "NULL"
	if id != "" {
		idText = lit(id)
	}
	return strings.NewReplacer("{{organization}}", lit(org), "{{organization_id}}", idText).Replace(text)
}
