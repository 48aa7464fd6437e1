package store

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tally-dev/tally/fetch"
)

func TestQueryNeverWrites(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "tally.duckdb")
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	load(t, s, fetch.UsageQuery{Window: window(t, fetch.Day, "2026-01-01", "2026-01-08")},
		row(date(t, "2026-01-01"), "enc", "a", "1"), row(date(t, "2026-01-02"), "enc", "a", "2"))

	// On the writer's store a query runs in a transaction rolled back.
	if _, err := s.Query(ctx, `DELETE FROM usage`); err != nil {
		t.Fatal(err)
	}
	if n := count(t, s, `SELECT count(*) FROM usage`); n != 2 {
		t.Fatalf("a query deleted rows: %d left", n)
	}
	s.Close()

	ro, err := OpenReadOnly(ctx, path)
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

// sample is a result with one value of each kind WriteResult renders.
func sample(t *testing.T) *Result {
	t.Helper()
	s := openTemp(t)
	res, err := s.Query(context.Background(), `SELECT
    'plain' AS s,
    'a,b "quoted"' || chr(10) || 'line' AS tricky,
    12345678901234.123456789012::DECIMAL(38,12) AS cost,
    NULL::VARCHAR AS nothing,
    DATE '2026-01-02' AS day,
    TIMESTAMP '2026-01-02 03:04:05.5' AS at,
    2.5::DOUBLE AS quantity,
    42::BIGINT AS n,
    true AS ok,
    '0f8fad5b-d9cb-469f-a165-70867728950e'::UUID AS id,
    ['x', 'y'] AS list
UNION ALL SELECT 'second', '', -0.000000000001::DECIMAL(38,12), 'x', NULL, NULL, 0.1, -7, false, NULL, []`)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestWriteResultCSV(t *testing.T) {
	var b strings.Builder
	if err := WriteResult(&b, "csv", sample(t)); err != nil {
		t.Fatal(err)
	}
	// encoding/csv writes a newline inside a quoted field as CRLF too, which
	// RFC 4180 allows and CSV readers turn back into a newline.
	want := "s,tricky,cost,nothing,day,at,quantity,n,ok,id,list\r\n" +
		"plain,\"a,b \"\"quoted\"\"\r\nline\",12345678901234.123456789012,,2026-01-02,2026-01-02T03:04:05.5Z,2.5,42,true,0f8fad5b-d9cb-469f-a165-70867728950e,\"[\"\"x\"\",\"\"y\"\"]\"\r\n" +
		"second,,-0.000000000001,x,,,0.1,-7,false,,[]\r\n"
	if b.String() != want {
		t.Fatalf("csv:\n%q\nwant:\n%q", b.String(), want)
	}
	recs, err := csv.NewReader(strings.NewReader(b.String())).ReadAll()
	if err != nil || len(recs) != 3 || recs[1][1] != "a,b \"quoted\"\nline" {
		t.Fatalf("csv does not read back: %v %v", recs, err)
	}
}

func TestWriteResultJSON(t *testing.T) {
	var b strings.Builder
	if err := WriteResult(&b, "json", sample(t)); err != nil {
		t.Fatal(err)
	}
	want := `[
{"s":"plain","tricky":"a,b \"quoted\"\nline","cost":"12345678901234.123456789012","nothing":null,"day":"2026-01-02","at":"2026-01-02T03:04:05.5Z","quantity":2.5,"n":42,"ok":true,"id":"0f8fad5b-d9cb-469f-a165-70867728950e","list":["x","y"]},
{"s":"second","tricky":"","cost":"-0.000000000001","nothing":"x","day":null,"at":null,"quantity":0.1,"n":-7,"ok":false,"id":null,"list":[]}
]
`
	if b.String() != want {
		t.Fatalf("json:\n%s\nwant:\n%s", b.String(), want)
	}
	var rows []map[string]any
	if err := json.Unmarshal([]byte(b.String()), &rows); err != nil || len(rows) != 2 {
		t.Fatalf("not one JSON array of objects: %v", err)
	}

	b.Reset()
	if err := WriteResult(&b, "json", &Result{Columns: []string{"a"}, Types: []string{"INTEGER"}, Rows: [][]any{}}); err != nil || b.String() != "[]\n" {
		t.Fatalf("empty result: %q %v", b.String(), err)
	}
}

func TestWriteResultTable(t *testing.T) {
	var b strings.Builder
	res := sample(t)
	res.Columns, res.Types = res.Columns[:4], res.Types[:4]
	for i := range res.Rows {
		res.Rows[i] = res.Rows[i][:4]
	}
	if err := WriteResult(&b, "table", res); err != nil {
		t.Fatal(err)
	}
	want := "" +
		"s       tricky              cost                         nothing\n" +
		"------  ------------------  ---------------------------  -------\n" +
		"plain   a,b \"quoted\"\\nline  12345678901234.123456789012  NULL\n" +
		"second                                  -0.000000000001  x\n" +
		"(2 rows)\n"
	if b.String() != want {
		t.Fatalf("table:\n%s\nwant:\n%s", b.String(), want)
	}
	mustContain(t, WriteResult(&b, "xml", res), `"xml"`, "table, csv, json")
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

	// Every named query runs on a loaded store, and the cost queries add up.
	s := openTemp(t)
	load(t, s, fetch.UsageQuery{Window: window(t, fetch.Hour, "2026-01-30", "2026-02-02")},
		row(date(t, "2026-01-31").Add(3*3600e9), "enc", "a", "0.000000000001"),
		row(date(t, "2026-01-31").Add(5*3600e9), "enc", "a", "2"),
		row(date(t, "2026-02-01"), "enc", "a", "3"))
	load(t, s, fetch.UsageQuery{Window: window(t, fetch.Day, "2026-01-30", "2026-02-02")},
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
				got = append(got, r[1].(time.Time).Format(fetch.DateLayout)+" "+mustDecimal(t, r[6]).String())
			}
			equalLines(t, q.Name, got, []string{"2026-01-31 2.000000000001", "2026-02-01 3.000000000000"})
		case "cost_by_project_month":
			if len(res.Rows) != 2 || mustDecimal(t, res.Rows[0][4]).Cmp(fetch.MustDecimal("2.000000000001")) != 0 {
				t.Errorf("%s: %v", q.Name, res.Rows)
			}
		}
	}
}

// Money in table output shows the decimals the amount has, at least two:
// not the twelve a DECIMAL(38,12) column pads it with.
func TestWriteResultTableMoney(t *testing.T) {
	var b strings.Builder
	res := &Result{Columns: []string{"cost"}, Types: []string{"DECIMAL(38,12)"}, Rows: [][]any{
		{"3.000000000000"}, {"12.500000000000"}, {"0.100000000001"}, {"-7.010000000000"}, {"42"},
	}}
	if err := WriteResult(&b, "table", res); err != nil {
		t.Fatal(err)
	}
	got := strings.Fields(b.String())
	wantCells := []string{"cost", "--------------", "3.00", "12.50", "0.100000000001", "-7.01", "42", "(5", "rows)"}
	if strings.Join(got, " ") != strings.Join(wantCells, " ") {
		t.Fatalf("table:\n%s\nwant cells %v", b.String(), wantCells)
	}
}
