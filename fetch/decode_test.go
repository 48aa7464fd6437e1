package fetch

import (
	"context"
	"errors"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tally-dev/tally"
)

// decodePage reads a whole usage answer with the decoder Usage uses.
func decodePage(body string, csv bool) ([]tally.MeterData, string, error) {
	p := newUsagePage(context.Background(), io.NopCloser(strings.NewReader(body)), nil, csv)
	defer p.close()
	var rows []tally.MeterData
	for {
		md, ok, err := p.next()
		if err != nil {
			return rows, "", err
		}
		if !ok {
			return rows, p.nextLink(), nil
		}
		rows = append(rows, md)
	}
}

func mustTime(t *testing.T, s string) time.Time {
	t.Helper()
	tm, err := time.Parse(time.RFC3339, s)
	if err != nil {
		t.Fatal(err)
	}
	return tm.UTC()
}

const fullRowJSON = `{"date":"2026-10-01T00:00:00Z","dateProcessed":"2026-10-02T00:00:00Z","meterName":"video_encoding_ondemand",
"meterSku":"SKU-1","family":"Encoding","solution":"VOD","unit":"minutes","quantity":12.5,"price":0.02,"cost":"0.2500",
"currency":"USD","entitlement":"7f9c2d4e-0000-4000-8000-000000000001","entitlementType":"cash",
"paymentMethod":"5a1b2c3d-0000-4000-8000-000000000002","paymentMethodName":"Main","project":"alpha"}`

func TestDecodeUsageJSONFullRow(t *testing.T) {
	rows, next, err := decodePage(`{"value":[`+fullRowJSON+`],"supplemental":{"records":1}}`, false)
	if err != nil {
		t.Fatal(err)
	}
	if next != "" || len(rows) != 1 {
		t.Fatalf("rows %d, next %q", len(rows), next)
	}
	r := rows[0]
	price := 0.02
	dp := mustTime(t, "2026-10-02T00:00:00Z")
	want := tally.MeterData{
		Date: mustTime(t, "2026-10-01T00:00:00Z"), DateProcessed: &dp, MeterName: "video_encoding_ondemand",
		MeterSku: "SKU-1", Family: "Encoding", Solution: "VOD", Unit: "minutes", Quantity: 12.5, Price: &price,
		Cost: tally.MustDecimal("0.2500"), Currency: "USD", Entitlement: "7f9c2d4e-0000-4000-8000-000000000001",
		EntitlementType: "cash", PaymentMethod: "5a1b2c3d-0000-4000-8000-000000000002", PaymentMethodName: "Main", Project: "alpha",
	}
	assertRow(t, r, want)
}

func assertRow(t *testing.T, got, want tally.MeterData) {
	t.Helper()
	if !got.Date.Equal(want.Date) || got.Date.Location() != time.UTC {
		t.Errorf("Date = %v, want %v in UTC", got.Date, want.Date)
	}
	switch {
	case (got.DateProcessed == nil) != (want.DateProcessed == nil):
		t.Errorf("DateProcessed = %v, want %v", got.DateProcessed, want.DateProcessed)
	case got.DateProcessed != nil && !got.DateProcessed.Equal(*want.DateProcessed):
		t.Errorf("DateProcessed = %v, want %v", *got.DateProcessed, *want.DateProcessed)
	}
	switch {
	case (got.Price == nil) != (want.Price == nil):
		t.Errorf("Price = %v, want %v", got.Price, want.Price)
	case got.Price != nil && *got.Price != *want.Price:
		t.Errorf("Price = %v, want %v", *got.Price, *want.Price)
	}
	if got.Cost.String() != want.Cost.String() {
		t.Errorf("Cost = %s, want %s", got.Cost, want.Cost)
	}
	texts := func(m tally.MeterData) [12]string {
		return [12]string{m.MeterName, m.MeterSku, m.Family, m.Solution, m.Unit, m.Currency, m.Entitlement,
			m.EntitlementType, m.PaymentMethod, m.PaymentMethodName, m.Project, strconv.FormatFloat(m.Quantity, 'g', -1, 64)}
	}
	if g, w := texts(got), texts(want); g != w {
		t.Errorf("row text fields and quantity = %q\nwant %q", g, w)
	}
}

func TestDecodeUsageJSON(t *testing.T) {
	minimal := func(extra string) string {
		return `{"date":"2026-10-01T00:00:00Z","meterName":"m","cost":"1.00","currency":"EUR","quantity":1` + extra + `}`
	}
	tests := []struct {
		name     string
		body     string
		rows     int
		next     string
		check    func(t *testing.T, rows []tally.MeterData)
		wantErr  []string // substrings of the error
		truncErr bool     // the error wraps ErrTruncated
	}{
		{name: "next link after value", body: `{"value":[` + minimal("") + `],"@odata.nextLink":"https://x/next"}`, rows: 1, next: "https://x/next"},
		{name: "next link before value", body: `{"@odata.nextLink":"/p2","supplemental":{"x":[1,{"y":2}]},"value":[` + minimal("") + `,` + minimal("") + `]}`, rows: 2, next: "/p2"},
		{name: "next link null", body: `{"value":[],"@odata.nextLink":null}`, rows: 0},
		{name: "value null", body: `{"value":null}`, rows: 0},
		{name: "keys in any order", body: `{"value":[{"quantity":3,"currency":"USD","cost":"9.9","meterName":"z","date":"2026-10-01"}]}`, rows: 1,
			check: func(t *testing.T, rows []tally.MeterData) {
				if rows[0].Quantity != 3 || rows[0].Cost.String() != "9.9" || rows[0].MeterName != "z" || rows[0].Currency != "USD" {
					t.Errorf("row %+v", rows[0])
				}
			}},
		{name: "nulls", body: `{"value":[` + minimal(`,"dateProcessed":null,"meterSku":null,"unit":null,"price":null,"entitlement":null,"entitlementType":null,"paymentMethodName":null,"project":null`) + `]}`, rows: 1,
			check: func(t *testing.T, rows []tally.MeterData) {
				r := rows[0]
				if r.DateProcessed != nil || r.Price != nil || r.MeterSku != "" || r.Unit != "" || r.Entitlement != "" || r.Project != "" {
					t.Errorf("nulls not empty: %+v", r)
				}
			}},
		{name: "unknown fields ignored", body: `{"kind":"x","value":[{"extra":{"a":[1,2,{"b":null}]},"date":"2026-10-01T00:00:00Z","meterName":"m","more":[[]],"cost":"1","currency":"EUR","quantity":1,"flag":true}],"other":"y"}`, rows: 1},
		{name: "cost as a number is exact", body: `{"value":[{"date":"2026-10-01T00:00:00Z","meterName":"m","cost":0.1000000000000000055511151231257827,"currency":"EUR","quantity":1}]}`, rows: 1,
			check: func(t *testing.T, rows []tally.MeterData) {
				if got := rows[0].Cost.String(); got != "0.1000000000000000055511151231257827" {
					t.Errorf("cost = %s", got)
				}
			}},
		{name: "date forms", body: `{"value":[` +
			`{"date":"2026-10-01T02:00:00+02:00","meterName":"m","cost":"1","currency":"EUR","quantity":1},` +
			`{"date":"2026-10-01T00:00:00","meterName":"m","cost":"1","currency":"EUR","quantity":1},` +
			`{"date":"2026-10-01","meterName":"m","cost":"1","currency":"EUR","quantity":1},` +
			`{"date":"2026-10-01T00:00:00.000Z","meterName":"m","cost":"1","currency":"EUR","quantity":1}]}`, rows: 4,
			check: func(t *testing.T, rows []tally.MeterData) {
				want := mustTime(t, "2026-10-01T00:00:00Z")
				for i, r := range rows {
					if !r.Date.Equal(want) || r.Date.Location() != time.UTC {
						t.Errorf("row %d: date %v, want %v UTC", i+1, r.Date, want)
					}
				}
			}},
		{name: "quantity as string", body: `{"value":[` + strings.Replace(minimal(""), `"quantity":1`, `"quantity":"2.5"`, 1) + `]}`, rows: 1,
			check: func(t *testing.T, rows []tally.MeterData) {
				if rows[0].Quantity != 2.5 {
					t.Errorf("quantity %v", rows[0].Quantity)
				}
			}},
		{name: "missing date", body: `{"value":[{"meterName":"m","cost":"1","currency":"EUR","quantity":1}]}`, wantErr: []string{`"date"`, "missing"}},
		{name: "missing meterName", body: `{"value":[{"date":"2026-10-01","cost":"1","currency":"EUR","quantity":1}]}`, wantErr: []string{`"meterName"`, "missing"}},
		{name: "missing cost", body: `{"value":[{"date":"2026-10-01","meterName":"m","currency":"EUR","quantity":1}]}`, wantErr: []string{`"cost"`, "missing"}},
		{name: "missing currency", body: `{"value":[{"date":"2026-10-01","meterName":"m","cost":"1","quantity":1}]}`, wantErr: []string{`"currency"`, "missing"}},
		{name: "missing quantity", body: `{"value":[{"date":"2026-10-01","meterName":"m","cost":"1","currency":"EUR"}]}`, wantErr: []string{`"quantity"`, "missing"}},
		{name: "null cost", body: `{"value":[` + strings.Replace(minimal(""), `"cost":"1.00"`, `"cost":null`, 1) + `]}`, wantErr: []string{`"cost"`, "missing or null"}},
		{name: "bad cost", body: `{"value":[` + strings.Replace(minimal(""), `"cost":"1.00"`, `"cost":"12,50"`, 1) + `]}`, wantErr: []string{`"cost"`, `"12,50"`, "not a decimal"}},
		{name: "cost NaN", body: `{"value":[` + strings.Replace(minimal(""), `"cost":"1.00"`, `"cost":"NaN"`, 1) + `]}`, wantErr: []string{`"cost"`, `"NaN"`}},
		{name: "cost boolean", body: `{"value":[` + strings.Replace(minimal(""), `"cost":"1.00"`, `"cost":true`, 1) + `]}`, wantErr: []string{`"cost"`, "true"}},
		{name: "bad date", body: `{"value":[` + strings.Replace(minimal(""), `"2026-10-01T00:00:00Z"`, `"01/10/2026"`, 1) + `]}`, wantErr: []string{`"date"`, `"01/10/2026"`}},
		{name: "quantity not finite", body: `{"value":[` + strings.Replace(minimal(""), `"quantity":1`, `"quantity":"Inf"`, 1) + `]}`, wantErr: []string{`"quantity"`, `"Inf"`}},
		{name: "meterName a number", body: `{"value":[` + strings.Replace(minimal(""), `"meterName":"m"`, `"meterName":7`, 1) + `]}`, wantErr: []string{`"meterName"`, "7", "not a string"}},
		{name: "field an object", body: `{"value":[` + strings.Replace(minimal(""), `"meterName":"m"`, `"meterName":{"a":1}`, 1) + `]}`, wantErr: []string{`"meterName"`, "not a single value"}},
		{name: "row not an object", body: `{"value":[1]}`, wantErr: []string{"row is a number"}},
		{name: "no value", body: `{"supplemental":{}}`, wantErr: []string{`no "value"`}},
		{name: "value not an array", body: `{"value":{"a":1}}`, wantErr: []string{`"value" is an object`}},
		{name: "not an object", body: `[1,2]`, wantErr: []string{"not a JSON object"}},
		{name: "bad next link", body: `{"value":[],"@odata.nextLink":5}`, wantErr: []string{"nextLink"}},
		{name: "syntax error", body: `{"value":[` + minimal("") + `,}`, wantErr: []string{"invalid character"}},
		{name: "cut mid-row", body: `{"value":[` + minimal("") + `,{"date":"2026-10-01T00:00:00Z","meterNa`, truncErr: true},
		{name: "cut after value", body: `{"value":[` + minimal("") + `]`, truncErr: true},
		{name: "cut before anything", body: ``, truncErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rows, next, err := decodePage(tt.body, false)
			switch {
			case tt.truncErr:
				if !errors.Is(err, ErrTruncated) || !Retryable(err) {
					t.Fatalf("err = %v, want ErrTruncated (retryable)", err)
				}
				return
			case tt.wantErr != nil:
				if err == nil {
					t.Fatalf("no error; rows %+v", rows)
				}
				if errors.Is(err, ErrTruncated) || Retryable(err) {
					t.Errorf("a bad answer must not be retryable: %v", err)
				}
				for _, s := range tt.wantErr {
					if !strings.Contains(err.Error(), s) {
						t.Errorf("error %q does not contain %q", err, s)
					}
				}
				return
			case err != nil:
				t.Fatal(err)
			}
			if len(rows) != tt.rows || next != tt.next {
				t.Fatalf("rows %d next %q, want %d %q", len(rows), next, tt.rows, tt.next)
			}
			if tt.check != nil {
				tt.check(t, rows)
			}
		})
	}
}

func TestDecodeUsageCSV(t *testing.T) {
	const header = "date,meterName,cost,currency,quantity\n"
	tests := []struct {
		name     string
		body     string
		check    func(t *testing.T, rows []tally.MeterData)
		rows     int
		wantErr  []string
		truncErr bool
	}{
		{name: "columns in any order, empty cell is null",
			body: "project,quantity,cost,currency,meterName,date,dateProcessed,price,unit\n" +
				"alpha,12.5,0.2500,USD,enc,2026-10-01T00:00:00Z,,,minutes\n" +
				",1,1e-3,EUR,str,2026-10-02,2026-10-03T00:00:00Z,0.5,\n",
			rows: 2,
			check: func(t *testing.T, rows []tally.MeterData) {
				assertRow(t, rows[0], tally.MeterData{Date: mustTime(t, "2026-10-01T00:00:00Z"), MeterName: "enc", Unit: "minutes",
					Quantity: 12.5, Cost: tally.MustDecimal("0.2500"), Currency: "USD", Project: "alpha"})
				dp, price := mustTime(t, "2026-10-03T00:00:00Z"), 0.5
				assertRow(t, rows[1], tally.MeterData{Date: mustTime(t, "2026-10-02T00:00:00Z"), DateProcessed: &dp, MeterName: "str",
					Quantity: 1, Price: &price, Cost: tally.MustDecimal("0.001"), Currency: "EUR"})
			}},
		{name: "byte order mark and CRLF", body: "\ufeff" + strings.ReplaceAll(header, "\n", "\r\n") + "2026-10-01,m,1,EUR,1\r\n", rows: 1},
		{name: "quoted fields", body: header + `2026-10-01,"a, ""b""",1.5,EUR,1` + "\n", rows: 1,
			check: func(t *testing.T, rows []tally.MeterData) {
				if rows[0].MeterName != `a, "b"` {
					t.Errorf("meterName %q", rows[0].MeterName)
				}
			}},
		{name: "header only", body: header, rows: 0},
		{name: "no final line break", body: header + "2026-10-01,m,1,EUR,1", rows: 1},
		{name: "unknown header", body: "date,meterName,cost,currency,quantity,Colour\n", wantErr: []string{`"Colour"`, "not a MeterData field", "allowed"}},
		{name: "header case matters", body: "Date,meterName,cost,currency,quantity\n", wantErr: []string{`"Date"`}},
		{name: "duplicate header", body: "date,meterName,cost,currency,quantity,cost\n", wantErr: []string{`"cost"`, "twice"}},
		{name: "missing required column", body: "date,meterName,currency\n", wantErr: []string{"cost", "quantity", "missing"}},
		{name: "missing required cell", body: header + "2026-10-01,,1,EUR,1\n", wantErr: []string{`"meterName"`, "missing"}},
		{name: "bad cost", body: header + "2026-10-01,m,1.2.3,EUR,1\n", wantErr: []string{`"cost"`, `"1.2.3"`}},
		{name: "short row in the middle", body: header + "2026-10-01,m,1\n2026-10-01,m,1,EUR,1\n", wantErr: []string{"wrong number of fields"}},
		{name: "cut mid-row", body: header + "2026-10-01,m,1,EUR,1\n2026-10-02,m,2", truncErr: true},
		{name: "cut in a quoted field", body: header + "2026-10-01,\"m", truncErr: true},
		{name: "empty body", body: "", truncErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rows, next, err := decodePage(tt.body, true)
			switch {
			case tt.truncErr:
				if !errors.Is(err, ErrTruncated) {
					t.Fatalf("err = %v, want ErrTruncated", err)
				}
				return
			case tt.wantErr != nil:
				if err == nil {
					t.Fatalf("no error; rows %+v", rows)
				}
				if Retryable(err) {
					t.Errorf("a bad answer must not be retryable: %v", err)
				}
				for _, s := range tt.wantErr {
					if !strings.Contains(err.Error(), s) {
						t.Errorf("error %q does not contain %q", err, s)
					}
				}
				return
			case err != nil:
				t.Fatal(err)
			}
			if len(rows) != tt.rows || next != "" {
				t.Fatalf("rows %d next %q, want %d", len(rows), next, tt.rows)
			}
			if tt.check != nil {
				tt.check(t, rows)
			}
		})
	}
}

func TestIsCSV(t *testing.T) {
	for ct, want := range map[string]bool{
		"text/csv": true, "text/csv; charset=utf-8": true, "TEXT/CSV": true, "application/csv": true,
		"application/json": false, "": false, "text/plain": false, "text/csvx": false,
	} {
		if got := isCSV(ct); got != want {
			t.Errorf("isCSV(%q) = %v, want %v", ct, got, want)
		}
	}
}
