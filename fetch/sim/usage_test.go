package sim_test

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tally-dev/tally"
	"github.com/tally-dev/tally/fetch/sim"
)

const usagePath = "/api/v1/organization/reports/usage"

// requestBody renders q as CustomerUsageQueryData.
func requestBody(q tally.UsageQuery) string {
	m := map[string]any{
		"startDate":   q.Window.Start.Format(tally.DateLayout),
		"endDate":     q.Window.End.Format(tally.DateLayout),
		"granularity": string(q.Window.Granularity),
		"groupBy":     []string{"meter"},
	}
	if q.Format != "" {
		m["format"] = string(q.Format)
	}
	if q.ReportedDate {
		m["filterOnReportedDate"] = true
	}
	if len(q.ProjectNames) > 0 {
		m["projectNames"] = q.ProjectNames
	}
	if len(q.PaymentMethodIDs) > 0 {
		m["paymentMethodIds"] = q.PaymentMethodIDs
	}
	if len(q.MeterNames) > 0 {
		m["meterNames"] = q.MeterNames
	}
	b, _ := json.Marshal(m)
	return string(b)
}

type usagePage struct {
	Value        []tally.MeterData `json:"value"`
	Supplemental struct {
		Records     int      `json:"records"`
		Start       string   `json:"start"`
		End         string   `json:"end"`
		Format      string   `json:"format"`
		Download    bool     `json:"download"`
		Granularity string   `json:"granularity"`
		GroupBy     []string `json:"groupBy"`
		Filters     struct {
			ProjectNames     []string `json:"projectNames"`
			PaymentMethodIDs []string `json:"paymentMethodIds"`
			MeterNames       []string `json:"meterNames"`
		} `json:"filters"`
	} `json:"supplemental"`
	NextLink string `json:"@odata.nextLink"`
}

// decodePage decodes one JSON usage answer strictly: a field the tests do
// not know is an error.
func decodePage(t *testing.T, raw []byte) usagePage {
	t.Helper()
	var p usagePage
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		t.Fatalf("decode usage answer: %v\n%.600s", err, raw)
	}
	return p
}

func post(t *testing.T, url, body string) []byte {
	t.Helper()
	resp := do(t, http.MethodPost, url, body, "")
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read answer: %v", err)
	}
	if resp.StatusCode != 200 {
		t.Fatalf("POST %s %s: status %d: %s", url, body, resp.StatusCode, raw)
	}
	return raw
}

// usageJSON runs q in JSON and follows @odata.nextLink, by POST with the
// same body or, when get is set, by GET.
func usageJSON(t *testing.T, ts *httptest.Server, q tally.UsageQuery, get bool) (rows []tally.MeterData, pages []usagePage) {
	t.Helper()
	body := requestBody(q)
	p := decodePage(t, post(t, ts.URL+usagePath, body))
	for {
		pages = append(pages, p)
		rows = append(rows, p.Value...)
		if p.Supplemental.Records != len(p.Value) {
			t.Errorf("supplemental.records %d for %d rows", p.Supplemental.Records, len(p.Value))
		}
		if p.NextLink == "" {
			return rows, pages
		}
		if !strings.HasPrefix(p.NextLink, ts.URL+usagePath+"?$skiptoken=") {
			t.Fatalf("nextLink %q", p.NextLink)
		}
		if get {
			resp := do(t, http.MethodGet, p.NextLink, "", "")
			raw, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				t.Fatalf("GET %s: %d %s", p.NextLink, resp.StatusCode, raw)
			}
			p = decodePage(t, raw)
		} else {
			p = decodePage(t, post(t, p.NextLink, body))
		}
	}
}

// usageCSV runs q in CSV and decodes the rows by column name.
func usageCSV(t *testing.T, ts *httptest.Server, q tally.UsageQuery) []tally.MeterData {
	t.Helper()
	q.Format = tally.FormatCSV
	resp := do(t, http.MethodPost, ts.URL+usagePath, requestBody(q), "")
	defer resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/csv" {
		t.Fatalf("csv answer: status %d, Content-Type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	recs, err := csv.NewReader(resp.Body).ReadAll()
	if err != nil {
		t.Fatalf("read csv: %v", err)
	}
	header := strings.Join(recs[0], ",")
	if want := "date,dateProcessed,meterName,meterSku,family,solution,unit,quantity,price,cost,currency,entitlement,entitlementType,paymentMethod,paymentMethodName,project"; header != want {
		t.Fatalf("csv header %q, want %q", header, want)
	}
	col := map[string]int{}
	for i, h := range recs[0] {
		col[h] = i
	}
	var rows []tally.MeterData
	for _, r := range recs[1:] {
		get := func(name string) string { return r[col[name]] }
		var md tally.MeterData
		var err error
		if md.Date, err = time.Parse(time.RFC3339, get("date")); err != nil {
			t.Fatal(err)
		}
		if v := get("dateProcessed"); v != "" {
			dp, err := time.Parse(time.RFC3339, v)
			if err != nil {
				t.Fatal(err)
			}
			md.DateProcessed = &dp
		}
		md.MeterName, md.MeterSku, md.Family, md.Solution, md.Unit = get("meterName"), get("meterSku"), get("family"), get("solution"), get("unit")
		if md.Quantity, err = strconv.ParseFloat(get("quantity"), 64); err != nil {
			t.Fatal(err)
		}
		if v := get("price"); v != "" {
			p, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatal(err)
			}
			md.Price = &p
		}
		if md.Cost, err = tally.ParseDecimal(get("cost")); err != nil {
			t.Fatal(err)
		}
		md.Currency, md.Entitlement, md.EntitlementType = get("currency"), get("entitlement"), get("entitlementType")
		md.PaymentMethod, md.PaymentMethodName, md.Project = get("paymentMethod"), get("paymentMethodName"), get("project")
		rows = append(rows, md)
	}
	return rows
}

func rowString(r tally.MeterData) string {
	dp, price := "null", "null"
	if r.DateProcessed != nil {
		dp = r.DateProcessed.UTC().Format(time.RFC3339)
	}
	if r.Price != nil {
		price = strconv.FormatFloat(*r.Price, 'g', -1, 64)
	}
	return fmt.Sprintf("%s %s %s|%s|%s|%s|%s q=%s p=%s c=%s %s %s|%s %s|%s %s",
		r.Date.UTC().Format(time.RFC3339), dp, r.MeterName, r.MeterSku, r.Family, r.Solution, r.Unit,
		strconv.FormatFloat(r.Quantity, 'g', -1, 64), price, r.Cost.String(), r.Currency,
		r.Entitlement, r.EntitlementType, r.PaymentMethod, r.PaymentMethodName, r.Project)
}

// sameRows compares rows field by field, the cost by its exact text.
func sameRows(t *testing.T, what string, got, want []tally.MeterData) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d rows, want %d", what, len(got), len(want))
	}
	for i := range got {
		if g, w := rowString(got[i]), rowString(want[i]); g != w {
			t.Fatalf("%s: row %d\n got %s\nwant %s", what, i, g, w)
		}
	}
}

func TestUsageAnswersMatchRows(t *testing.T) {
	s, ts := setup(t, sim.Options{Seed: 3})
	pms := s.Rows(usageQuery("2025-03-01", "2025-03-02", tally.Day))
	cases := map[string]tally.UsageQuery{
		"hour":              usageQuery("2025-02-10", "2025-02-17", tally.Hour),
		"day":               usageQuery("2025-01-01", "2025-04-01", tally.Day),
		"week, unaligned":   usageQuery("2025-01-08", "2025-03-19", tally.Week),
		"month":             usageQuery("2025-01-01", "2025-07-01", tally.Month),
		"year":              usageQuery("2024-01-01", "2027-01-01", tally.Year),
		"reported day":      {Window: tally.Window{Start: mustDate("2025-02-01"), End: mustDate("2025-03-01"), Granularity: tally.Day}, ReportedDate: true},
		"projects":          {Window: tally.Window{Start: mustDate("2025-01-01"), End: mustDate("2025-03-01"), Granularity: tally.Day}, ProjectNames: []string{"sports-live", "training"}},
		"meters":            {Window: tally.Window{Start: mustDate("2025-01-01"), End: mustDate("2025-03-01"), Granularity: tally.Week}, MeterNames: []string{"storage_gb_hours", "drm_license_requests"}},
		"payment method":    {Window: tally.Window{Start: mustDate("2025-02-01"), End: mustDate("2025-03-01"), Granularity: tally.Day}, PaymentMethodIDs: []string{pms[0].PaymentMethod}},
		"around the clock":  usageQuery("2026-01-01", "2026-02-01", tally.Hour),
		"before any usage":  usageQuery("2024-06-01", "2024-07-01", tally.Day),
		"unknown project":   {Window: tally.Window{Start: mustDate("2025-01-01"), End: mustDate("2025-02-01"), Granularity: tally.Day}, ProjectNames: []string{"nope"}},
		"reported, recent":  {Window: tally.Window{Start: mustDate("2026-01-01"), End: mustDate("2026-01-15"), Granularity: tally.Hour}, ReportedDate: true},
		"day, one project":  {Window: tally.Window{Start: mustDate("2025-06-01"), End: mustDate("2025-06-02"), Granularity: tally.Day}, ProjectNames: []string{"archive"}},
		"hour, one meter":   {Window: tally.Window{Start: mustDate("2025-06-01"), End: mustDate("2025-06-02"), Granularity: tally.Hour}, MeterNames: []string{"live_channel_minutes"}},
		"month, reported":   {Window: tally.Window{Start: mustDate("2025-01-01"), End: mustDate("2026-01-01"), Granularity: tally.Month}, ReportedDate: true},
		"week, two project": {Window: tally.Window{Start: mustDate("2025-01-06"), End: mustDate("2025-04-07"), Granularity: tally.Week}, ProjectNames: []string{"archive", "newsroom"}},
	}
	for name, q := range cases {
		t.Run(name, func(t *testing.T) {
			want := s.Rows(q)
			got, pages := usageJSON(t, ts, q, false)
			sameRows(t, "json", got, want)
			sameRows(t, "csv", usageCSV(t, ts, q), want)
			if len(pages) != 1 {
				t.Errorf("%d pages without UsagePaging", len(pages))
			}
			sup := pages[0].Supplemental
			if sup.Start != q.Window.Start.Format(tally.DateLayout) || sup.End != q.Window.End.Format(tally.DateLayout) ||
				sup.Granularity != string(q.Window.Granularity) || sup.Format != "json" || len(sup.GroupBy) != 1 ||
				strings.Join(sup.Filters.ProjectNames, ",") != strings.Join(q.ProjectNames, ",") ||
				strings.Join(sup.Filters.MeterNames, ",") != strings.Join(q.MeterNames, ",") {
				t.Errorf("supplemental %+v does not echo the query", sup)
			}
			if len(q.ProjectNames) > 0 {
				for _, r := range want {
					if !contains(q.ProjectNames, r.Project) {
						t.Fatalf("row of project %q outside the filter", r.Project)
					}
				}
			}
			if len(q.MeterNames) > 0 {
				for _, r := range want {
					if !contains(q.MeterNames, r.MeterName) {
						t.Fatalf("row of meter %q outside the filter", r.MeterName)
					}
				}
			}
			for _, r := range want {
				if !r.Date.Equal(q.Window.Granularity.Truncate(r.Date)) {
					t.Fatalf("date %s is not a %s bucket start", r.Date, q.Window.Granularity)
				}
			}
		})
	}
}

func contains(list []string, v string) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

func TestUsageJSONShape(t *testing.T) {
	_, ts := setup(t, sim.Options{})
	raw := post(t, ts.URL+usagePath, `{"startDate":"2025-01-11","endDate":"2025-01-12","download":true}`)
	var env struct {
		Value        []map[string]json.RawMessage `json:"value"`
		Supplemental map[string]json.RawMessage   `json:"supplemental"`
	}
	if err := json.Unmarshal(raw, &env); err != nil {
		t.Fatal(err)
	}
	if len(env.Value) == 0 {
		t.Fatal("no rows")
	}
	sawNull := map[string]bool{}
	for _, r := range env.Value {
		if len(r) != 16 {
			t.Fatalf("row has %d fields, want the 16 of MeterData: %v", len(r), r)
		}
		if r["cost"][0] != '"' {
			t.Errorf("cost %s is not a JSON string", r["cost"])
		}
		c, err := tally.ParseDecimal(strings.Trim(string(r["cost"]), `"`))
		if err != nil || c.Scale() != 10 {
			t.Errorf("cost %s: %v, want 10 decimals", r["cost"], err)
		}
		var date string
		json.Unmarshal(r["date"], &date)
		if _, err := time.Parse(time.RFC3339, date); err != nil || !strings.HasSuffix(date, "Z") {
			t.Errorf("date %s is not RFC 3339 UTC", r["date"])
		}
		if r["quantity"][0] == '"' {
			t.Errorf("quantity %s is not a JSON number", r["quantity"])
		}
		for k, v := range r {
			if string(v) == "null" {
				sawNull[k] = true
			}
		}
	}
	for _, k := range []string{"meterSku", "unit", "price", "entitlement", "entitlementType"} {
		if !sawNull[k] {
			t.Errorf("no row has %s null", k)
		}
	}
	var download bool
	json.Unmarshal(env.Supplemental["download"], &download)
	if !download {
		t.Errorf("supplemental.download %s, want true", env.Supplemental["download"])
	}
	resp := do(t, http.MethodPost, ts.URL+usagePath, `{"startDate":"2025-01-11","endDate":"2025-01-12","download":true,"format":"csv"}`, "")
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if cd := resp.Header.Get("Content-Disposition"); !strings.HasPrefix(cd, "attachment;") || !strings.Contains(cd, ".csv") {
		t.Errorf("Content-Disposition %q", cd)
	}
}

func TestUsagePaging(t *testing.T) {
	s, ts := setup(t, sim.Options{UsagePaging: true, PageSize: 7})
	q := usageQuery("2025-02-10", "2025-02-14", tally.Day)
	want := s.Rows(q)
	if len(want) < 30 {
		t.Fatalf("only %d rows; the test wants several pages", len(want))
	}
	for _, get := range []bool{false, true} {
		got, pages := usageJSON(t, ts, q, get)
		sameRows(t, fmt.Sprintf("paged, GET=%v", get), got, want)
		if n := (len(want) + 6) / 7; len(pages) != n {
			t.Errorf("GET=%v: %d pages, want %d", get, len(pages), n)
		}
		for i, p := range pages[:len(pages)-1] {
			if len(p.Value) != 7 {
				t.Errorf("page %d has %d rows, want 7", i, len(p.Value))
			}
		}
	}
	// CSV carries no next link, so it is never paged.
	sameRows(t, "csv", usageCSV(t, ts, q), want)
	wantError(t, do(t, http.MethodGet, ts.URL+usagePath+"?$skiptoken=garbage", "", ""), 400, "InvalidRequest")
}

// sumCost adds the rows' costs per currency, exactly.
func sumCost(rows []tally.MeterData) map[string]*big.Rat {
	out := map[string]*big.Rat{}
	for _, r := range rows {
		if out[r.Currency] == nil {
			out[r.Currency] = new(big.Rat)
		}
		out[r.Currency].Add(out[r.Currency], r.Cost.Rat())
	}
	return out
}

// q4 is a quantity in units of 10^-4: every quantity the sim sends has 4
// decimals, so summing these is exact.
func q4(f float64) int64 { return int64(math.Round(f * 1e4)) }

func TestTruthEqualsRows(t *testing.T) {
	s, _ := setup(t, sim.Options{Seed: 11, Now: fixedClock(time.Date(2025, 8, 20, 7, 0, 0, 0, time.UTC))})
	cases := map[string]tally.UsageQuery{
		"year of hours": usageQuery("2025-01-01", "2026-01-01", tally.Hour),
		"day":           usageQuery("2025-02-01", "2025-08-21", tally.Day),
		"reported week": {Window: tally.Window{Start: mustDate("2025-01-06"), End: mustDate("2025-08-25"), Granularity: tally.Week}, ReportedDate: true},
		"month filter":  {Window: tally.Window{Start: mustDate("2025-01-01"), End: mustDate("2025-09-01"), Granularity: tally.Month}, ProjectNames: []string{"sports-live"}},
	}
	for name, q := range cases {
		t.Run(name, func(t *testing.T) {
			rows := s.Rows(q)
			tr := s.Truth(q)
			if tr.Rows != len(rows) || len(rows) == 0 {
				t.Errorf("Truth.Rows %d, rows %d", tr.Rows, len(rows))
			}
			sums := sumCost(rows)
			if len(sums) != len(tr.Cost) {
				t.Errorf("currencies %v, truth %v", sums, tr.Cost)
			}
			for cur, sum := range sums {
				want := tr.Cost[cur]
				if sum.Cmp(want.Rat()) != 0 {
					t.Errorf("%s: rows sum to %s, truth %s", cur, sum.FloatString(10), want)
				}
			}
			var qsum int64
			for _, r := range rows {
				qsum += q4(r.Quantity)
			}
			if qsum != q4(tr.Quantity) {
				t.Errorf("quantity: rows %d, truth %d (×10^-4)", qsum, q4(tr.Quantity))
			}
		})
	}
}

// rollUp sums finer rows into the coarser granularity g, keyed as the
// interface groups rows.
func rollUp(rows []tally.MeterData, g tally.Granularity) map[string][2]string {
	type acc struct {
		cost *big.Rat
		q    int64
	}
	m := map[string]*acc{}
	for _, r := range rows {
		dp := "null"
		if r.DateProcessed != nil {
			dp = g.Truncate(*r.DateProcessed).Format(time.RFC3339)
		}
		k := strings.Join([]string{g.Truncate(r.Date).Format(time.RFC3339), dp, r.MeterName, r.Project, r.PaymentMethod, r.Entitlement, r.Currency}, "|")
		if m[k] == nil {
			m[k] = &acc{cost: new(big.Rat)}
		}
		m[k].cost.Add(m[k].cost, r.Cost.Rat())
		m[k].q += q4(r.Quantity)
	}
	out := map[string][2]string{}
	for k, a := range m {
		out[k] = [2]string{a.cost.FloatString(10), strconv.FormatInt(a.q, 10)}
	}
	return out
}

func TestAggregationConsistency(t *testing.T) {
	// The clock falls inside the window, so provisional rows are summed too.
	s, _ := setup(t, sim.Options{Seed: 5, Now: fixedClock(time.Date(2025, 4, 9, 15, 0, 0, 0, time.UTC))})
	for _, reported := range []bool{false, true} {
		// Weeks straddle months, so months roll up from days.
		for _, step := range [][2]tally.Granularity{{tally.Hour, tally.Day}, {tally.Day, tally.Week}, {tally.Day, tally.Month}, {tally.Month, tally.Year}, {tally.Hour, tally.Year}} {
			finer, g := step[0], step[1]
			t.Run(fmt.Sprintf("%s from %s, reported=%v", g, finer, reported), func(t *testing.T) {
				// The window is whole years, so it covers whole buckets of
				// every granularity below a year.
				q := func(g tally.Granularity) tally.UsageQuery {
					return tally.UsageQuery{Window: tally.Window{Start: mustDate("2024-01-01"), End: mustDate("2026-01-01"), Granularity: g}, ReportedDate: reported}
				}
				fine, coarse := s.Rows(q(finer)), s.Rows(q(g))
				got, want := rollUp(fine, g), rollUp(coarse, g)
				if len(coarse) != len(want) {
					t.Fatalf("%s answer has two rows with the same key", g)
				}
				if len(got) != len(want) || len(want) == 0 {
					t.Fatalf("%d %s groups from %s rows, %d %s rows", len(got), g, finer, len(want), g)
				}
				for k, w := range want {
					if got[k] != w {
						t.Fatalf("%s: %s rows sum to %v, %s row says %v", k, finer, got[k], g, w)
					}
				}
			})
		}
	}
}

func TestReportedBasisExcludesUncharged(t *testing.T) {
	now := time.Date(2025, 3, 18, 9, 0, 0, 0, time.UTC)
	s, _ := setup(t, sim.Options{Now: fixedClock(now)})
	w := tally.Window{Start: mustDate("2025-03-10"), End: mustDate("2025-03-19"), Granularity: tally.Hour}
	usage := s.Rows(tally.UsageQuery{Window: w})
	uncharged := 0
	for _, r := range usage {
		if r.DateProcessed == nil {
			uncharged++
		}
	}
	if uncharged == 0 {
		t.Fatal("the usage basis shows no uncharged row near the clock")
	}
	reported := s.Rows(tally.UsageQuery{Window: w, ReportedDate: true})
	early := 0
	for _, r := range reported {
		if r.DateProcessed == nil {
			t.Fatalf("reported basis returned an uncharged row: %s", rowString(r))
		}
		if !w.Contains(*r.DateProcessed) || r.DateProcessed.After(now) {
			t.Fatalf("dateProcessed %s outside %s or after the clock", r.DateProcessed, w)
		}
		if r.Date.Before(w.Start) {
			early++
		}
	}
	if early == 0 {
		t.Error("no usage sampled before the window yet charged in it")
	}
}

func TestLateCharges(t *testing.T) {
	now := time.Date(2025, 5, 20, 10, 0, 0, 0, time.UTC)
	var clockNow atomic.Int64
	clockNow.Store(now.Unix())
	s, ts := setup(t, sim.Options{Now: func() time.Time { return time.Unix(clockNow.Load(), 0).UTC() }})
	recent := usageQuery("2025-05-19", "2025-05-21", tally.Hour)
	old := usageQuery("2025-05-01", "2025-05-15", tally.Day)
	recentBefore, _ := usageJSON(t, ts, recent, false)
	oldBefore, _ := usageJSON(t, ts, old, false)
	truthBefore := s.Truth(recent)

	clockNow.Store(now.Add(48 * time.Hour).Unix())
	recentAfter, _ := usageJSON(t, ts, recent, false)
	oldAfter, _ := usageJSON(t, ts, old, false)
	sameRows(t, "old rows after the clock moved", oldAfter, oldBefore)

	before := map[string]tally.MeterData{}
	for _, r := range recentBefore {
		if r.DateProcessed != nil && r.Date.After(now.Add(-6*time.Hour)) {
			t.Fatalf("an hour less than 6 hours old is charged: %s", rowString(r))
		}
		before[r.Date.Format(time.RFC3339)+r.Project+r.MeterName] = r
	}
	revised := 0
	for _, r := range recentAfter {
		b, ok := before[r.Date.Format(time.RFC3339)+r.Project+r.MeterName]
		if !ok {
			if r.Date.Before(now.Truncate(time.Hour).Add(-time.Hour)) {
				t.Fatalf("row %s is new for an hour that had passed", rowString(r))
			}
			continue
		}
		if r.DateProcessed == nil {
			t.Fatalf("row %s still uncharged 48 hours later", rowString(r))
		}
		if b.DateProcessed != nil {
			if rowString(r) != rowString(b) {
				t.Errorf("a charged row changed:\n%s\n%s", rowString(b), rowString(r))
			}
			continue
		}
		if r.Cost.Cmp(b.Cost) < 0 || r.Quantity < b.Quantity {
			t.Errorf("charged row %s is smaller than its provisional %s", rowString(r), rowString(b))
		}
		if r.Cost.Cmp(b.Cost) != 0 {
			revised++
		}
	}
	if revised == 0 {
		t.Error("no provisional row was revised when charged")
	}
	if len(recentAfter) <= len(recentBefore) {
		t.Errorf("%d rows after the clock moved, %d before: the new hours are missing", len(recentAfter), len(recentBefore))
	}
	if after := s.Truth(recent); after.Cost["USD"].Cmp(truthBefore.Cost["USD"]) <= 0 {
		t.Errorf("truth did not grow: %s then %s", truthBefore.Cost["USD"], after.Cost["USD"])
	}
}

func TestDeterminism(t *testing.T) {
	_, a := setup(t, sim.Options{Seed: 42})
	_, b := setup(t, sim.Options{Seed: 42})
	_, c := setup(t, sim.Options{Seed: 43})
	bodies := []string{
		`{"startDate":"2025-03-01","endDate":"2025-04-01","granularity":"day"}`,
		`{"startDate":"2025-03-01","endDate":"2025-03-03","granularity":"hour","format":"csv","filterOnReportedDate":true}`,
	}
	for _, body := range bodies {
		x, y, z := post(t, a.URL+usagePath, body), post(t, b.URL+usagePath, body), post(t, c.URL+usagePath, body)
		if !bytes.Equal(x, y) {
			t.Errorf("same seed, different bytes for %s", body)
		}
		if bytes.Equal(x, z) {
			t.Errorf("another seed, same bytes for %s", body)
		}
	}
	for _, path := range []string{"/api/v1/organization/paymentMethods", "/api/v1/projects", "/api/v1/locations", "/api/v1/organization"} {
		var x, y json.RawMessage
		getJSON(t, a.URL+path, &x)
		getJSON(t, b.URL+path, &y)
		if !bytes.Equal(x, y) {
			t.Errorf("same seed, different %s", path)
		}
	}
}

// BenchmarkYearOfDailyData measures one answer of a year of daily usage;
// the sim computes what a query needs from the hourly truth, so this stays
// well under a second (go test -bench YearOfDaily ./fetch/sim).
func BenchmarkYearOfDailyData(b *testing.B) {
	srv := sim.New(sim.Options{Now: func() time.Time { return time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC) }})
	q := tally.UsageQuery{Window: tally.Window{Start: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC), End: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), Granularity: tally.Day}}
	for b.Loop() {
		if rows := srv.Rows(q); len(rows) < 365*15 {
			b.Fatalf("%d rows for a year of days", len(rows))
		}
	}
}
