package sql

import (
	"io/fs"
	"path"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// Every view file yields its query, and only under its own name.
func TestView(t *testing.T) {
	names, err := fs.Glob(Views, "views/*.sql")
	if err != nil || len(names) == 0 {
		t.Fatalf("views: %v %v", names, err)
	}
	for _, n := range names {
		v := strings.TrimSuffix(path.Base(n), ".sql")
		c, err := View(v)
		if err != nil {
			t.Fatal(err)
		}
		q := c.Query
		if c.Name != v || strings.Contains(q, "CREATE") || strings.HasSuffix(q, ";") || !strings.HasPrefix(q, "WITH") && !strings.HasPrefix(q, "SELECT") {
			t.Errorf("%s: %s, query starts %.30q and ends %q", v, c.Name, q, q[len(q)-10:])
		}
	}
	if _, err := View("no_such_view"); err == nil || !strings.Contains(err.Error(), "no_such_view") {
		t.Errorf("unknown view: %v", err)
	}
}

func TestWith(t *testing.T) {
	a, b := CTE{"a", "SELECT 1 AS x"}, CTE{"b", "SELECT x FROM a"}
	head := "WITH a AS NOT MATERIALIZED (\nSELECT 1 AS x\n),\nb AS NOT MATERIALIZED (\nSELECT x FROM a\n)"
	for _, tc := range []struct{ query, want string }{
		// A leading WITH (after comments) gains the CTEs in front.
		{"-- a query\n-- about x\nWITH m AS (SELECT 1)\nSELECT * FROM m, b",
			head + ",\nm AS (SELECT 1)\nSELECT * FROM m, b"},
		{"with m as (select 1) select * from m", head + ",\nm as (select 1) select * from m"},
		// A plain SELECT gets a WITH.
		{"SELECT * FROM b", head + "\nSELECT * FROM b"},
	} {
		if got := With(tc.query, a, b); got != tc.want {
			t.Errorf("With(%q):\n%s\nwant:\n%s", tc.query, got, tc.want)
		}
	}
	if got := With("SELECT 1"); got != "SELECT 1" {
		t.Errorf("With no CTE = %q", got)
	}
	if got, err := Inline("SELECT 1 -- not usage_rows"); err != nil || got != "SELECT 1 -- not usage_rows" {
		t.Errorf("Inline of a query that reads no view = %q, %v", got, err)
	}
}

// Inline defines the views a query reads, and those they read, each after
// the views it reads; names in comments do not count.
func TestInline(t *testing.T) {
	q := "-- reads payment_methods only here\nSELECT * FROM rate_card_variance JOIN usage_rows USING (basis)"
	got, err := Inline(q)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, m := range regexp.MustCompile(`(?m)^(?:WITH |,)?(\w+) AS NOT MATERIALIZED \(`).FindAllStringSubmatch(got, -1) {
		names = append(names, m[1])
	}
	// organization: the view of that name, inlined because the views name
	// their organization column so (a word is taken as a read; an unused
	// CTE costs nothing).
	if want := []string{"organization", "usage_meter_days", "meter_months", "meter_skus", "project_usage_days", "snapshots_in_force", "rate_card_matches", "usage_coverage", "usage_rows", "usage_day_totals", "usage_finest_days", "rate_card_variance"}; !slices.Equal(names, want) {
		t.Errorf("Inline defines %v, want %v", names, want)
	}
	if !strings.HasSuffix(got, "\n"+q) {
		t.Errorf("Inline does not end with the query:\n%s", got)
	}
}

// InlineWhere puts a table's condition first, as a CTE of the table's name
// reading main.<table>, and wraps a view's definition in its condition.
func TestInlineWhere(t *testing.T) {
	q := "SELECT * FROM usage_finest"
	got, err := InlineWhere(q, map[string]string{"usage": "date >= $from", "usage_coverage": "day < $to"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(got, "WITH usage AS NOT MATERIALIZED (\nSELECT * FROM main.usage WHERE date >= $from\n),\n") {
		t.Errorf("the table's condition does not come first:\n%.300s", got)
	}
	cov, err := View("usage_coverage")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(got, "usage_coverage AS NOT MATERIALIZED (\nSELECT * FROM (\n"+cov.Query+"\n) WHERE day < $to\n)") {
		t.Errorf("the view's condition does not wrap it:\n%s", got)
	}
	if plain, _ := Inline(q); strings.Contains(plain, "main.usage") || strings.Contains(plain, "$to") {
		t.Errorf("Inline applies a condition")
	}
}

// InlineDefined puts the given query in place of a view's file for every
// view that reads it, and inlines what that query reads instead of what
// the file read.
func TestInlineDefined(t *testing.T) {
	got, err := InlineDefined("SELECT * FROM meter_months", nil,
		map[string]string{"meter_months": "SELECT * FROM usage_coverage WHERE day >= $from"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(got, "meter_months AS NOT MATERIALIZED (\nSELECT * FROM usage_coverage WHERE day >= $from\n)") {
		t.Errorf("the definition is not the view's:\n%s", got)
	}
	if !strings.Contains(got, "usage_coverage AS NOT MATERIALIZED") || strings.Contains(got, "usage_meter_days AS") {
		t.Errorf("inlines what the file reads, not what the definition reads:\n%s", got)
	}
	if _, err := InlineDefined("SELECT 1", nil, map[string]string{"no_such_view": "SELECT 1"}); err == nil {
		t.Error("a definition of no view was taken")
	}
}

// A view comes after the views it reads; names in comments do not count;
// otherwise the order is by name; a cycle is an error naming it.
func TestViewOrder(t *testing.T) {
	got, err := ViewOrder(map[string]string{
		"a_report": "-- reads b_base and zz_last only in this comment\nCREATE VIEW a_report AS SELECT * FROM m_middle",
		"b_base":   "CREATE VIEW b_base AS SELECT 1 AS x",
		"m_middle": "CREATE VIEW m_middle AS SELECT * FROM b_base JOIN b_base_other USING (x)",
		"zz_last":  "CREATE VIEW zz_last AS SELECT 2 -- a_report",
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"b_base", "m_middle", "a_report", "zz_last"}; !slices.Equal(got, want) {
		t.Errorf("order %v, want %v", got, want)
	}
	_, err = ViewOrder(map[string]string{
		"x": "CREATE VIEW x AS SELECT * FROM y",
		"y": "CREATE VIEW y AS SELECT * FROM x",
	})
	if err == nil || !strings.Contains(err.Error(), "x → y → x") {
		t.Errorf("a cycle: %v", err)
	}
}
