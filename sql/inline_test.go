package sql

import (
	"io/fs"
	"path"
	"strings"
	"testing"
)

// Every view file yields its query, and only under its own name.
func TestViewSelect(t *testing.T) {
	names, err := fs.Glob(Views, "views/*.sql")
	if err != nil || len(names) == 0 {
		t.Fatalf("views: %v %v", names, err)
	}
	for _, n := range names {
		v := strings.TrimSuffix(path.Base(n), ".sql")
		body, err := ViewSelect(v)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(body, "CREATE") || strings.HasSuffix(body, ";") || !strings.HasPrefix(body, "WITH") && !strings.HasPrefix(body, "SELECT") {
			t.Errorf("%s: query starts %.30q and ends %q", v, body, body[len(body)-10:])
		}
	}
	if _, err := ViewSelect("no_such_view"); err == nil || !strings.Contains(err.Error(), "no_such_view") {
		t.Errorf("unknown view: %v", err)
	}
}

func TestInline(t *testing.T) {
	body, err := ViewSelect("rate_card_matches")
	if err != nil {
		t.Fatal(err)
	}
	head := "WITH rate_card_matches AS (\n" + body + "\n)"
	for _, tc := range []struct{ query, want string }{
		// A leading WITH (after comments) gains one more CTE.
		{"-- a query\n-- about prices\nWITH m AS (SELECT 1)\nSELECT * FROM m, rate_card_matches",
			head + ",\nm AS (SELECT 1)\nSELECT * FROM m, rate_card_matches"},
		{"with m as (select 1) select * from m", head + ",\nm as (select 1) select * from m"},
		// A plain SELECT gets a WITH.
		{"SELECT * FROM rate_card_matches", head + "\nSELECT * FROM rate_card_matches"},
	} {
		got, err := Inline(tc.query, "rate_card_matches")
		if err != nil {
			t.Fatal(err)
		}
		if got != tc.want {
			t.Errorf("Inline(%q):\n%s\nwant:\n%s", tc.query, got, tc.want)
		}
	}
	if got, err := Inline("SELECT 1"); err != nil || got != "SELECT 1" {
		t.Errorf("Inline without views = %q, %v", got, err)
	}
	if _, err := Inline("SELECT 1", "nope"); err == nil {
		t.Error("Inline of an unknown view did not fail")
	}
}
