package main

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tally-dev/tally/store"
)

// sample is a result with one value of each kind WriteResult renders.
func sample(t *testing.T) *store.Result {
	t.Helper()
	s, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "sample.duckdb"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
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
	if err := writeResult(&b, "csv", sample(t)); err != nil {
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
	if err := writeResult(&b, "json", sample(t)); err != nil {
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
	if err := writeResult(&b, "json", &store.Result{Columns: []string{"a"}, Types: []string{"INTEGER"}, Rows: [][]any{}}); err != nil || b.String() != "[]\n" {
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
	if err := writeResult(&b, "table", res); err != nil {
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
	outputMustContain(t, writeResult(&b, "xml", res), `"xml"`, "table, csv, json")
}

// Money in table output shows, in each column, the decimals its most
// precise amount needs, at least two: not the twelve a DECIMAL(38,12)
// column pads every amount with, and never fewer for one row than for
// another, so the figures line up and no trailing zero is dropped from one
// amount that its neighbour keeps.
func TestWriteResultTableMoney(t *testing.T) {
	for _, c := range []struct {
		name string
		in   []string
		want []string
	}{
		{"cents", []string{"3.000000000000", "12.500000000000", "-7.010000000000", "42"},
			[]string{"3.00", "12.50", "-7.01", "42.00"}},
		{"one amount finer", []string{"3.000000000000", "12.500000000000", "0.100000000001", "-7.010000000000"},
			[]string{"3.000000000000", "12.500000000000", "0.100000000001", "-7.010000000000"}},
		{"unit prices", []string{"0.015000000000", "0.250000000000"}, []string{"0.015", "0.250"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			res := &store.Result{Columns: []string{"cost"}, Types: []string{"DECIMAL(38,12)"}}
			for _, v := range c.in {
				res.Rows = append(res.Rows, []any{v})
			}
			var b strings.Builder
			if err := writeResult(&b, "table", res); err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
			if len(lines) != len(c.in)+3 {
				t.Fatalf("table:\n%s", b.String())
			}
			width := len(lines[1])
			for i, want := range c.want {
				line := lines[i+2]
				if strings.TrimSpace(line) != want || len(line) != width {
					t.Errorf("row %d: %q, want %q right-aligned to %d\n%s", i, line, want, width, b.String())
				}
			}
		})
	}
}

func outputMustContain(t *testing.T, err error, parts ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("got no error, want one containing %q", parts)
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Fatalf("error %q does not contain %q", err, p)
		}
	}
}

// TestWriteResultNestedValues: maps, structs and lists print their
// decimals as exact decimal text and their doubles as the shortest text
// that reads back the same, in every format; never Go's inner fields.
func TestWriteResultNestedValues(t *testing.T) {
	s, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "nested.duckdb"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	res, err := s.Query(context.Background(), `SELECT
    map {'EUR': 81876.92067::DECIMAL(38,12), 'USD': 1.5::DECIMAL(38,12)} AS cost,
    {'zone': 'eu', 'amount': 2.25::DECIMAL(10,2), 'parts': [0.1::DOUBLE + 0.2, 39080695.7::DOUBLE], 'day': DATE '2026-01-02', "odd ""name""": [TIMESTAMP '2026-01-02 03:04:05']} AS detail,
    [map {2: 0.5::DECIMAL(5,1)}] AS list,
    (39080695.6::DOUBLE + 0.1::DOUBLE) AS quantity`)
	if err != nil {
		t.Fatal(err)
	}
	cost := `{"EUR":"81876.920670000000","USD":"1.500000000000"}`
	// A STRUCT's fields in their order, a DATE inside it as a date.
	detail := `{"zone":"eu","amount":"2.25","parts":[0.30000000000000004,39080695.7],"day":"2026-01-02","odd \"name\"":["2026-01-02T03:04:05Z"]}`
	list := `[{"2":"0.5"}]`
	for _, c := range []struct{ format, want string }{
		{"json", `[` + "\n" + `{"cost":` + cost + `,"detail":` + detail + `,"list":` + list + `,"quantity":39080695.7}` + "\n" + `]` + "\n"},
		{"csv", "cost,detail,list,quantity\r\n" + csvQuote(cost) + "," + csvQuote(detail) + "," + csvQuote(list) + ",39080695.7\r\n"},
	} {
		var b strings.Builder
		if err := writeResult(&b, c.format, res); err != nil {
			t.Fatal(err)
		}
		if b.String() != c.want {
			t.Errorf("%s:\n%s\nwant:\n%s", c.format, b.String(), c.want)
		}
	}
	var b strings.Builder
	if err := writeResult(&b, "table", res); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{cost, detail, list, "39080695.7"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table does not show %s:\n%s", want, b.String())
		}
	}
	if strings.Contains(b.String(), "Width") || strings.Contains(b.String(), "Scale") {
		t.Errorf("table shows the driver's inner fields:\n%s", b.String())
	}
}

func csvQuote(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }
