package fetch

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/tally-dev/tally"
)

// listServer serves items in pages of size per, with next links
// (?$skiptoken=N) until the last page, and pagination totals.
type listServer struct {
	items []string // raw JSON items
	per   int
	total int // reported supplemental.pagination.total; -1 = omit supplemental
	// link, when set, replaces the next link of page p (1-based).
	link func(srvURL, path string, page int) string
	url  string
	mu   sync.Mutex
	hits []string
}

func (s *listServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	page := 1
	fmt.Sscan(r.URL.Query().Get("$skiptoken"), &page)
	s.mu.Lock()
	s.hits = append(s.hits, r.Method+" "+r.URL.RequestURI())
	s.mu.Unlock()
	from := min((page-1)*s.per, len(s.items))
	to := min(page*s.per, len(s.items))
	var b strings.Builder
	b.WriteString(`{"value":[` + strings.Join(s.items[from:to], ",") + `]`)
	if s.total >= 0 {
		fmt.Fprintf(&b, `,"supplemental":{"kind":"x","count":%d,"operation":"list","pagination":{"start":%d,"end":%d,"records":%d,"total":%d}}`,
			to-from, from, to, to-from, s.total)
	}
	next := ""
	if to < len(s.items) {
		next = fmt.Sprintf("%s%s?$skiptoken=%d", s.url, r.URL.Path, page+1)
	}
	if s.link != nil {
		next = s.link(s.url, r.URL.Path, page)
	}
	if next != "" {
		fmt.Fprintf(&b, `,"@odata.nextLink":%q`, next)
	}
	b.WriteString("}")
	writeJSON(w, 200, []byte(b.String()))
}

func (s *listServer) requests() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.hits...)
}

func newListServer(t *testing.T, items []string, per, total int) (*listServer, *httptest.Server) {
	ls := &listServer{items: items, per: per, total: total}
	srv := httptest.NewServer(ls)
	ls.url = srv.URL
	t.Cleanup(srv.Close)
	return ls, srv
}

func pmJSON(i int, spec string) string {
	return fmt.Sprintf(`{"metadata":{"id":"pm-%d","organizationId":"org-1","created":"2026-01-02T03:04:05Z","displayName":"PM %d"},
"spec":%s,"related":{"projects":["p%d","q%d"]},"status":{"isActive":%v,"termsAndConditionsAccepted":true}}`, i, i, spec, i, i, i%2 == 0)
}

func TestPaymentMethods(t *testing.T) {
	items := []string{
		pmJSON(0, `{"type":"direct","autoPurchaseStreamLicenses":true,"startDate":"2026-01-01","endDate":null,"productPublicationName":"pub","salesOrderNumber":"SO-1","notes":"n","status":"active"}`),
		pmJSON(1, `{"type":"marketplaceA","autoPurchaseStreamLicenses":false,"startDate":null,"endDate":"2027-01-01","productPublicationName":"pubA","marketplaceAAccountId":"acc"}`),
		pmJSON(2, `{"type":"someFutureMarketplace","autoPurchaseAcmeStreamLicenses":true,"startDate":null,"endDate":null,"productPublicationName":"pubX","newField":{"deep":[1]}}`),
		pmJSON(3, `{"autoPurchaseStreamLicenses":false,"startDate":"2026-02-01","endDate":"2026-03-01","productPublicationName":"pubD"}`),
		pmJSON(4, `null`),
	}
	ls, srv := newListServer(t, items, 2, len(items))
	c, _ := newTestClient(t, srv)
	pms, err := c.PaymentMethods(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(ls.requests(), ","); got != "GET /api/v1/organization/paymentMethods,GET /api/v1/organization/paymentMethods?$skiptoken=2,GET /api/v1/organization/paymentMethods?$skiptoken=3" {
		t.Errorf("requests %s", got)
	}
	if len(pms) != 5 {
		t.Fatalf("%d payment methods", len(pms))
	}
	want := []struct {
		typ, start, end, pub, so string
		auto, active             bool
	}{
		{"direct", "2026-01-01", "", "pub", "SO-1", true, true},
		{"marketplaceA", "", "2027-01-01", "pubA", "", false, false},
		{"someFutureMarketplace", "", "", "pubX", "", true, true},
		{"direct", "2026-02-01", "2026-03-01", "pubD", "", false, false},
		{"direct", "", "", "", "", false, true},
	}
	day := func(p interface{ Format(string) string }) string { return p.Format(tally.DateLayout) }
	for i, pm := range pms {
		w := want[i]
		start, end := "", ""
		if pm.StartDate != nil {
			start = day(pm.StartDate)
		}
		if pm.EndDate != nil {
			end = day(pm.EndDate)
		}
		if pm.ID != fmt.Sprintf("pm-%d", i) || pm.OrganizationID != "org-1" || pm.DisplayName != fmt.Sprintf("PM %d", i) ||
			pm.Type != w.typ || start != w.start || end != w.end || pm.ProductPublicationName != w.pub || pm.SalesOrderNumber != w.so ||
			pm.AutoPurchaseStreamLicenses != w.auto || pm.IsActive != w.active || !pm.TermsAndConditionsAccepted ||
			fmt.Sprint(pm.Projects) != fmt.Sprintf("[p%d q%d]", i, i) || pm.Created == nil || pm.Created.Format("15:04:05") != "03:04:05" {
			t.Errorf("payment method %d = %+v", i, pm)
		}
		var raw map[string]any
		if err := json.Unmarshal(pm.Raw, &raw); err != nil || raw["metadata"] == nil {
			t.Errorf("payment method %d: Raw %s", i, pm.Raw)
		}
	}
	if pms[0].Notes != "n" {
		t.Errorf("notes %q", pms[0].Notes)
	}
	// The whole spec is kept, fields Tally does not know included.
	if !strings.Contains(string(pms[2].Spec), `"newField":{"deep":[1]}`) || pms[4].Spec != nil {
		t.Errorf("spec kept as %s / %s", pms[2].Spec, pms[4].Spec)
	}
}

// Lists stop when the running count reaches pagination.total, even when the
// server still offers a next link.
func TestListStopsAtTotal(t *testing.T) {
	items := []string{pmJSON(0, `{}`), pmJSON(1, `{}`), pmJSON(2, `{}`), pmJSON(3, `{}`)}
	for _, tt := range []struct {
		name  string
		total int
		want  int
		hits  int
	}{
		{"total reached on page 1", 2, 2, 1},
		{"total reached on page 2", 3, 4, 2},
		{"no supplemental: follow the links", -1, 4, 2},
		{"total 0 means unknown", 0, 4, 2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ls, srv := newListServer(t, items, 2, tt.total)
			c, _ := newTestClient(t, srv)
			pms, err := c.PaymentMethods(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if len(pms) != tt.want || len(ls.requests()) != tt.hits {
				t.Errorf("%d items after %v", len(pms), ls.requests())
			}
		})
	}
}

func TestListLoopGuardAndForeignLinks(t *testing.T) {
	var otherHits atomic.Int64
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		otherHits.Add(1)
		writeJSON(w, 200, []byte(`{"value":[]}`))
	}))
	defer other.Close()
	items := []string{pmJSON(0, `{}`), pmJSON(1, `{}`), pmJSON(2, `{}`), pmJSON(3, `{}`), pmJSON(4, `{}`), pmJSON(5, `{}`)}
	tests := []struct {
		name    string
		link    func(srvURL, path string, page int) string
		wantErr string
		hits    int
	}{
		{"page 3 links back to page 2", func(u, p string, page int) string {
			if page == 3 {
				return fmt.Sprintf("%s%s?$skiptoken=2", u, p)
			}
			return fmt.Sprintf("%s%s?$skiptoken=%d", u, p, page+1)
		}, "already followed", 3},
		{"page 2 links to the first page", func(u, p string, page int) string {
			if page == 2 {
				return u + p
			}
			return fmt.Sprintf("%s%s?$skiptoken=%d", u, p, page+1)
		}, "already followed", 2},
		{"link to another server", func(u, p string, page int) string { return other.URL + p + "?$skiptoken=2" }, "not on the base url's origin", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ls, srv := newListServer(t, items, 2, -1)
			ls.link = tt.link
			c, _ := newTestClient(t, srv)
			_, err := c.Projects(context.Background())
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.Contains(err.Error(), "list projects") {
				t.Fatalf("err = %v, want %q", err, tt.wantErr)
			}
			if len(ls.requests()) != tt.hits {
				t.Errorf("requests %v, want %d", ls.requests(), tt.hits)
			}
		})
	}
	if otherHits.Load() != 0 {
		t.Errorf("%d requests reached the other origin", otherHits.Load())
	}
}

func TestListItemErrors(t *testing.T) {
	tests := []struct {
		name    string
		body    string
		wantErr []string
	}{
		{"missing id", `{"value":[` + pmJSON(0, `{}`) + `,{"metadata":{},"spec":{}}]}`, []string{"payment method 2", "metadata.id is missing"}},
		{"bad start date", `{"value":[` + pmJSON(0, `{"startDate":"01.02.2026"}`) + `]}`, []string{"payment method 1 (id pm-0)", "spec.startDate", `"01.02.2026"`}},
		{"bad flag", `{"value":[` + pmJSON(0, `{"autoPurchaseStreamLicenses":"yes"}`) + `]}`, []string{"pm-0", "autoPurchaseStreamLicenses", "not a boolean"}},
		{"wrong type", `{"value":[{"metadata":{"id":5}}]}`, []string{"payment method 1", "metadata.id"}},
		{"not an envelope", `[]`, []string{"not a JSON object"}},
		{"not UTF-8", `{"value":[` + pmJSON(0, `{"name":"alpha`+"\xff\xfe"+`-live"}`) + `]}`, []string{"item 1", "not UTF-8"}},
		{"replacement character", `{"value":[` + pmJSON(0, `{"name":"alpha\ufffd-live"}`) + `]}`, []string{"item 1", "U+FFFD"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var hits atomic.Int64
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				hits.Add(1)
				writeJSON(w, 200, []byte(tt.body))
			}))
			defer srv.Close()
			c, _ := newTestClient(t, srv)
			_, err := c.PaymentMethods(context.Background())
			if err == nil {
				t.Fatal("no error")
			}
			for _, s := range tt.wantErr {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not contain %q", err, s)
				}
			}
			if hits.Load() != 1 {
				t.Errorf("a bad answer was retried: %d requests", hits.Load())
			}
		})
	}
}

// A list page cut mid-way is fetched again; nothing of it is kept twice.
func TestListPageCutIsRetried(t *testing.T) {
	items := []string{pmJSON(0, `{}`), pmJSON(1, `{}`), pmJSON(2, `{}`)}
	ls := &listServer{items: items, per: 2, total: 3}
	var cut atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.RawQuery != "" && cut.Add(1) == 1 {
			rec := httptest.NewRecorder()
			ls.ServeHTTP(rec, r)
			w.Header().Set("Content-Length", fmt.Sprint(rec.Body.Len()))
			w.Write(rec.Body.Bytes()[:rec.Body.Len()/2])
			return
		}
		ls.ServeHTTP(w, r)
	}))
	defer srv.Close()
	ls.url = srv.URL
	c, rec := newTestClient(t, srv)
	pms, err := c.PaymentMethods(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(pms) != 3 || pms[2].ID != "pm-2" || len(rec.get()) != 1 {
		t.Errorf("%d items, delays %v", len(pms), rec.get())
	}
}

func TestPaymentMethodByID(t *testing.T) {
	hc := &headerCapture{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cr := hc.record(r)
		if cr.path != "/api/v1/organization/paymentMethods/a%2Fb%20c%3F" {
			http.NotFound(w, r)
			return
		}
		writeJSON(w, 200, []byte(pmJSON(7, `{"type":"marketplaceB","marketplaceBPrivateOfferId":"x"}`)))
	}))
	defer srv.Close()
	c, _ := newTestClient(t, srv)
	pm, err := c.PaymentMethod(context.Background(), "a/b c?")
	if err != nil {
		t.Fatalf("%v (requests %+v)", err, hc.all())
	}
	if pm.ID != "pm-7" || pm.Type != "marketplaceB" || !strings.Contains(string(pm.Spec), "marketplaceBPrivateOfferId") {
		t.Errorf("payment method %+v", pm)
	}
	for _, id := range []string{"", " ", ".", ".."} {
		if _, err := c.PaymentMethod(context.Background(), id); err == nil || !strings.Contains(err.Error(), "not an id") {
			t.Errorf("PaymentMethod(%q): %v", id, err)
		}
		if _, err := c.RateCard(context.Background(), id); err == nil {
			t.Errorf("RateCard(%q) accepted", id)
		}
	}
	if n := len(hc.all()); n != 1 {
		t.Errorf("%d requests, want 1", n)
	}
}

const rateCardBody = `{"kind":"RateCard","metadata":{"paymentMethodId":"pm-1","productPublicationId":"pp-1",
"productPublicationName":"Standard","isPrivateOffer":true,"other":"x"},
"spec":{"currency":"EUR","rateCard":[
 {"family":"Encoding","solution":"VOD","prices":[
  {"name":"advanced_sd(video_encoding_ondemand)","displayName":"Advanced SD","sku":"ENC-SD","unit":"minutes","price":0.0123400},
  {"name":"x","displayName":"X","sku":"X-1","unit":"GB","price":12345678901234567890.123456789,
   "locationPrices":[{"locationGroup":"eu","sku":"X-EU","price":1e-7},{"locationGroup":"us","sku":null,"price":"0.5"}]}]},
 {"family":"Streaming","solution":"Live","prices":[]}]}}`

func TestRateCard(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/v1/organization/paymentMethods/pm-1/rateCard" {
			writeAPIError(w, 404, "NotFound", "no such card", "r404")
			return
		}
		writeJSON(w, 200, []byte(rateCardBody))
	}))
	defer srv.Close()
	c, _ := newTestClient(t, srv)
	rc, err := c.RateCard(context.Background(), "pm-1")
	if err != nil {
		t.Fatal(err)
	}
	if rc.PaymentMethodID != "pm-1" || rc.ProductPublicationID != "pp-1" || rc.ProductPublicationName != "Standard" ||
		!rc.IsPrivateOffer || rc.Currency != "EUR" || len(rc.Entries) != 2 || !json.Valid(rc.Raw) {
		t.Fatalf("rate card %+v", rc)
	}
	e := rc.Entries[0]
	if e.Family != "Encoding" || e.Solution != "VOD" || len(e.Prices) != 2 || len(rc.Entries[1].Prices) != 0 {
		t.Fatalf("entry %+v", e)
	}
	p0, p1 := e.Prices[0], e.Prices[1]
	if p0.Name != "advanced_sd(video_encoding_ondemand)" || p0.DisplayName != "Advanced SD" || p0.Sku != "ENC-SD" || p0.Unit != "minutes" ||
		p0.Price.String() != "0.0123400" || len(p0.LocationPrices) != 0 {
		t.Errorf("price 0 %+v (%s)", p0, p0.Price)
	}
	// Beyond a float's precision: the text is kept exactly.
	if p1.Price.String() != "12345678901234567890.123456789" {
		t.Errorf("price 1 = %s", p1.Price)
	}
	if len(p1.LocationPrices) != 2 || p1.LocationPrices[0].Price.String() != "0.0000001" || p1.LocationPrices[0].Sku != "X-EU" ||
		p1.LocationPrices[1].LocationGroup != "us" || p1.LocationPrices[1].Sku != "" || p1.LocationPrices[1].Price.String() != "0.5" {
		t.Errorf("location prices %+v", p1.LocationPrices)
	}

	_, err = c.RateCard(context.Background(), "pm-2")
	var ae *APIError
	if !errors.As(err, &ae) || ae.Status != 404 || !strings.Contains(err.Error(), "pm-2") {
		t.Errorf("missing card: %v", err)
	}
}

func TestRateCardBadPrices(t *testing.T) {
	tests := []struct {
		name, body string
		wantErr    []string
	}{
		{"missing price", `{"metadata":{"paymentMethodId":"pm-1"},"spec":{"rateCard":[{"family":"F","solution":"S","prices":[{"name":"n1"}]}]}}`,
			[]string{"pm-1", "entry 1 (F/S) price 1 (n1)", "price is missing"}},
		{"text price", `{"metadata":{"paymentMethodId":"pm-1"},"spec":{"rateCard":[{"family":"F","solution":"S","prices":[{"name":"n1","price":"cheap"}]}]}}`,
			[]string{"pm-1", "price 1 (n1)", `price "cheap" is not a decimal`}},
		{"object price", `{"metadata":{"paymentMethodId":"pm-1"},"spec":{"rateCard":[{"family":"F","solution":"S","prices":[{"name":"n1","price":{"v":1}}]}]}}`,
			[]string{"price 1 (n1)", "not a decimal"}},
		{"bad location price", `{"metadata":{},"spec":{"rateCard":[{"family":"F","solution":"S","prices":[{"name":"n1","price":1,"locationPrices":[{"locationGroup":"eu"}]}]}]}}`,
			[]string{"location price 1 (eu)", "missing"}},
		{"cut document", `{"metadata":{},"spec":{"rateCard":[`, []string{"cut off"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				writeJSON(w, 200, []byte(tt.body))
			}))
			defer srv.Close()
			c, _ := newTestClient(t, srv, WithRetry(RetryPolicy{MaxAttempts: 1}))
			_, err := c.RateCard(context.Background(), "pm-1")
			if err == nil {
				t.Fatal("no error")
			}
			for _, s := range tt.wantErr {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not contain %q", err, s)
				}
			}
		})
	}
}

func TestProjectsLocationsOrganization(t *testing.T) {
	projects := []string{
		`{"kind":"Project","metadata":{"id":"p-1","name":"alpha","displayName":"Alpha meta","cloud":{"name":"c","displayName":"C"}},
		  "spec":{"name":"alpha","displayName":"Alpha","isActive":true,"locationId":"loc-1","locationName":"eu-west","assignedPaymentMethodId":"pm-1"}}`,
		`{"metadata":{"id":"p-2","name":"beta","displayName":"Beta"},"spec":{"isActive":false,"locationId":"loc-2","locationName":"us-east","assignedPaymentMethodId":null}}`,
		`{"metadata":{"id":"p-3"},"spec":{"name":"gamma","displayName":"Gamma","isActive":true,"locationId":"loc-1","locationName":"eu-west"}}`,
	}
	ls := &listServer{items: projects, per: 2, total: 3}
	mux := http.NewServeMux()
	mux.Handle("GET /custom/projects", ls)
	mux.HandleFunc("GET /api/v1/locations", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, []byte(`{"kind":"Location","value":[
		 {"metadata":{"id":"loc-1","name":"eu-west","displayName":"EU West"},"spec":{"type":"SaaS","cloud":{"name":"azure","displayName":"Azure","region":{"name":"westeurope","displayName":"West Europe"}}}},
		 {"metadata":{"id":"loc-2","name":"dedicated-1"},"spec":{"type":"Dedicated","organization":{"name":"Acme","id":null}}}]}`))
	})
	mux.HandleFunc("GET /api/v1/organization", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, []byte(`{"kind":"Organization","metadata":{"id":"org-1","isActive":true,"name":"acme-meta"},"spec":{"name":"Acme Media"}}`))
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	ls.url = srv.URL
	c, _ := newTestClient(t, srv, WithPaths(map[string]string{"projects": "/custom/projects"}))
	ctx := context.Background()

	ps, err := c.Projects(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := []tally.Project{
		{ID: "p-1", Name: "alpha", DisplayName: "Alpha", IsActive: true, LocationID: "loc-1", LocationName: "eu-west", AssignedPaymentMethodID: "pm-1"},
		{ID: "p-2", Name: "beta", DisplayName: "Beta", LocationID: "loc-2", LocationName: "us-east"},
		{ID: "p-3", Name: "gamma", DisplayName: "Gamma", IsActive: true, LocationID: "loc-1", LocationName: "eu-west"},
	}
	if len(ps) != len(want) {
		t.Fatalf("%d projects", len(ps))
	}
	for i := range ps {
		got := ps[i]
		if !json.Valid(got.Raw) {
			t.Errorf("project %d raw %s", i, got.Raw)
		}
		got.Raw = nil
		if fmt.Sprintf("%+v", got) != fmt.Sprintf("%+v", want[i]) {
			t.Errorf("project %d = %+v\nwant %+v", i, got, want[i])
		}
	}

	locs, err := c.Locations(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(locs) != 2 || locs[0].ID != "loc-1" || locs[0].Name != "eu-west" || locs[0].DisplayName != "EU West" || locs[0].Type != "SaaS" ||
		locs[0].CloudName != "azure" || locs[0].RegionName != "westeurope" || locs[1].Type != "Dedicated" || locs[1].CloudName != "" {
		t.Errorf("locations %+v", locs)
	}

	org, err := c.Organization(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if org.ID != "org-1" || org.Name != "Acme Media" || !json.Valid(org.Raw) {
		t.Errorf("organization %+v", org)
	}
	if o, err := decodeOrganization([]byte(`{"metadata":{"id":"o","name":"meta-name"},"spec":{}}`)); err != nil || o.Name != "meta-name" {
		t.Errorf("organization name falls back to metadata.name: %+v %v", o, err)
	}
	if _, err := decodeOrganization([]byte(`{"spec":{"name":"x"}}`)); err == nil || !strings.Contains(err.Error(), "metadata.id") {
		t.Errorf("organization without id: %v", err)
	}
}

// A list page of gigabytes (here 40 MiB of spaces inside value) fails after
// 32 MiB, naming the bound, and is not asked for again.
func TestListPageBounded(t *testing.T) {
	// The bound lowered to 2 MiB, the page 10 MiB: the same path as 32
	// MiB of 40, in a fraction of the time.
	old := maxDocument
	maxDocument = 2 << 20
	t.Cleanup(func() { maxDocument = old })
	var requests atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"value":[`))
		chunk := bytes.Repeat([]byte(" "), 64<<10)
		for range 160 {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
		w.Write([]byte(`]}`))
	}))
	defer srv.Close()
	c, _ := newTestClient(t, srv)
	_, err := c.Projects(context.Background())
	if err == nil || !strings.Contains(err.Error(), "larger than 2097152 bytes (2 MiB)") {
		t.Fatalf("err = %v, want the page bound named", err)
	}
	if n := requests.Load(); n != 1 {
		t.Errorf("the page was asked for %d times, want once", n)
	}
}
