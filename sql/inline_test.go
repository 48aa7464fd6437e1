package sql

import (
	"io/fs"
	"path"
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
	if _, err := Inline("SELECT 1", "nope"); err == nil {
		t.Error("Inline of an unknown view did not fail")
	}
	got, err := Inline("SELECT * FROM usage_rows", "usage_rows")
	if err != nil || !strings.HasPrefix(got, "WITH usage_rows AS NOT MATERIALIZED (\nSELECT *,") {
		t.Errorf("Inline = %.60q, %v", got, err)
	}
}
