package store

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tally-dev/tally"
)

func TestQueryNeverWrites(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "tally.duckdb")
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	load(t, s, tally.UsageQuery{Window: window(t, tally.Day, "2026-01-01", "2026-01-08")},
		row(date(t, "2026-01-01"), "enc", "a", "1"), row(date(t, "2026-01-02"), "enc", "a", "2"))

	// On the writer's store a query runs in a transaction rolled back.
	if _, err := s.Query(ctx, `DELETE FROM usage`); err != nil {
		t.Fatal(err)
	}
	if n := count(t, s, `SELECT count(*) FROM usage`); n != 2 {
		t.Fatalf("a query deleted rows: %d left", n)
	}
	s.Close()

	ro, err := Open(ctx, path, ReadOnly())
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	for _, q := range []string{`DELETE FROM usage`, `DROP TABLE usage`, `INSERT INTO runs (id, command, started, status) VALUES (uuid(), 'x', now(), 'ok')`} {
		_, err := ro.Query(ctx, q)
		mustContain(t, err, "read-only")
	}
	if n := count(t, ro, `SELECT count(*) FROM usage`); n != 2 {
		t.Fatalf("%d rows after refused writes, want 2", n)
	}
	_, err = ro.Query(ctx, `SELECT nope FROM usage`)
	mustContain(t, err, "nope")
	res, err := ro.Query(ctx, `SELECT count(*) FROM usage WHERE project = ? AND cost > ?`, "a", 1)
	if err != nil || res.Rows[0][0] != int64(1) {
		t.Fatalf("parameters: %v %v", res, err)
	}
}

func TestNamedQueries(t *testing.T) {
	qs, err := NamedQueries()
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]NamedQuery{}
	for _, q := range qs {
		byName[q.Name] = q
		if q.Description == "" || strings.HasPrefix(q.Description, q.Name) {
			t.Errorf("%s: description %q", q.Name, q.Description)
		}
	}
	for _, name := range []string{"cost_by_project_month", "cost_by_meter_day", "loaded_windows", "gaps", "last_runs", "loaded_spans", "freshness"} {
		if _, ok := byName[name]; !ok {
			t.Errorf("named query %s missing", name)
		}
	}
	if d := byName["gaps"].Description; d != "date ranges between loaded windows (start inclusive, end exclusive) that no window of the same granularity, basis and scope covers." {
		t.Errorf("description %q keeps the maintainers' note", d)
	}
	if d := byName["cost_by_project_month"].Description; d != "what each project cost per calendar month, per currency and basis (never summed across currencies or bases)." {
		t.Errorf("description %q", d)
	}
	_, err = FindNamedQuery("cost_by_moon")
	mustContain(t, err, `"cost_by_moon"`, "cost_by_project_month")

	views, err := Views()
	if err != nil {
		t.Fatal(err)
	}
	if len(views) < 4 || views[0].Description == "" {
		t.Fatalf("views %+v", views)
	}
	// tally query --name "" shows each description as the answer to "what
	// does this answer": one that stops mid-sentence (its header's first
	// paragraph ending on "problem is one of") answers nothing.
	for _, q := range append(qs, views...) {
		if d := strings.TrimSpace(q.Description); !strings.HasSuffix(d, ".") && !strings.HasSuffix(d, ")") {
			t.Errorf("%s: the description %q stops mid-sentence: end the header's first paragraph with a full stop", q.Name, d)
		}
	}

	// Every named query runs on a loaded store, and the cost queries add up.
	s := openTemp(t)
	load(t, s, tally.UsageQuery{Window: window(t, tally.Hour, "2026-01-30", "2026-02-02")},
		row(date(t, "2026-01-31").Add(3*3600e9), "enc", "a", "0.000000000001"),
		row(date(t, "2026-01-31").Add(5*3600e9), "enc", "a", "2"),
		row(date(t, "2026-02-01"), "enc", "a", "3"))
	load(t, s, tally.UsageQuery{Window: window(t, tally.Day, "2026-01-30", "2026-02-02")},
		row(date(t, "2026-01-31"), "enc", "a", "999"))
	for _, q := range qs {
		res, err := s.Query(context.Background(), q.SQL)
		if err != nil {
			t.Errorf("%s: %v", q.Name, err)
			continue
		}
		switch q.Name {
		case "cost_by_meter_day":
			var got []string
			for _, r := range res.Rows {
				got = append(got, r[1].(time.Time).Format(tally.DateLayout)+" "+mustDecimal(t, r[6]).String())
			}
			equalLines(t, q.Name, got, []string{"2026-01-31 2.000000000001", "2026-02-01 3.000000000000"})
		case "cost_by_project_month":
			if len(res.Rows) != 2 || mustDecimal(t, res.Rows[0][5]).Cmp(tally.MustDecimal("2.000000000001")) != 0 {
				t.Errorf("%s: %v", q.Name, res.Rows)
			}
		}
	}
}
