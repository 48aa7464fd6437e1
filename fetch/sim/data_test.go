package sim_test

import (
	"encoding/json"
	"math/big"
	"net/http"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/tally-dev/tally"
	"github.com/tally-dev/tally/fetch/sim"
)

type paymentMethodJSON struct {
	Metadata struct {
		ID          string `json:"id"`
		DisplayName string `json:"displayName"`
	} `json:"metadata"`
	Related struct {
		Projects []string `json:"projects"`
	} `json:"related"`
	Spec   map[string]any `json:"spec"`
	Status struct {
		IsActive *bool `json:"isActive"`
	} `json:"status"`
}

func paymentMethods(t *testing.T, base string) map[string]paymentMethodJSON {
	var p struct{ Value []paymentMethodJSON }
	getJSON(t, base+"/api/v1/organization/paymentMethods", &p)
	out := map[string]paymentMethodJSON{}
	for _, pm := range p.Value {
		out[pm.Metadata.ID] = pm
	}
	return out
}

func TestPaymentMethodVariants(t *testing.T) {
	_, ts := setup(t, sim.Options{})
	pms := paymentMethods(t, ts.URL)
	types := map[string]int{}
	expired, unbounded := 0, 0
	for id, pm := range pms {
		typ, _ := pm.Spec["type"].(string)
		types[typ]++
		for _, k := range []string{"type", "autoPurchaseStreamLicenses", "startDate", "endDate", "productPublicationName"} {
			if _, ok := pm.Spec[k]; !ok {
				t.Errorf("%s: spec.%s missing", id, k)
			}
		}
		need := map[string][]string{
			"direct":       {"salesOrderNumber", "redeemedBy", "status"},
			"marketplaceA": {"marketplaceAAccountId", "marketplaceAOfferId", "marketplaceAProductCode", "marketplaceACustomerId", "marketplaceAStatus"},
			"marketplaceB": {"marketplaceBPrivateOfferId", "marketplaceBOfferId", "marketplaceBPlanName", "marketplaceBSaasSubscriptionId", "marketplaceBSaasSubscriptionAutoRenew"},
		}[typ]
		for _, k := range need {
			if _, ok := pm.Spec[k]; !ok {
				t.Errorf("%s (%s): spec.%s missing", id, typ, k)
			}
		}
		if pm.Status.IsActive == nil {
			t.Errorf("%s: status.isActive missing", id)
		}
		if end, ok := pm.Spec["endDate"].(string); ok && mustDate(end).Before(clock) {
			expired++
		}
		if pm.Spec["startDate"] == nil && pm.Spec["endDate"] == nil {
			unbounded++
		}
		// The single payment method endpoint answers the same summary.
		var one paymentMethodJSON
		getJSON(t, ts.URL+"/api/v1/organization/paymentMethods/"+id, &one)
		if one.Metadata.ID != id || one.Spec["type"] != pm.Spec["type"] {
			t.Errorf("GET paymentMethods/%s = %+v", id, one)
		}
	}
	if types["direct"] == 0 || types["marketplaceA"] == 0 || types["marketplaceB"] == 0 {
		t.Errorf("variants %v, want direct, marketplaceA and marketplaceB", types)
	}
	if expired == 0 || unbounded == 0 {
		t.Errorf("%d methods with a past endDate and %d with null dates; want one of each at least", expired, unbounded)
	}
}

type rateCardJSON struct {
	Kind     string `json:"kind"`
	Metadata struct {
		PaymentMethodID        string `json:"paymentMethodId"`
		ProductPublicationID   string `json:"productPublicationId"`
		ProductPublicationName string `json:"productPublicationName"`
		IsPrivateOffer         *bool  `json:"isPrivateOffer"`
	} `json:"metadata"`
	Spec struct {
		Currency string `json:"currency"`
		RateCard []struct {
			Family   string `json:"family"`
			Solution string `json:"solution"`
			Prices   []struct {
				Name, DisplayName, Sku, Unit string
				Price                        json.Number `json:"price"`
				LocationPrices               []struct {
					LocationGroup string      `json:"locationGroup"`
					Sku           *string     `json:"sku"`
					Price         json.Number `json:"price"`
				} `json:"locationPrices"`
			} `json:"prices"`
		} `json:"rateCard"`
	} `json:"spec"`
}

var sixDecimals = regexp.MustCompile(`^\d+(\.\d{1,6})?$`)

// TestRateCardsJoinUsage joins usage to rate cards the documented way (sku,
// then the name in parentheses, then the plain name) and checks the quirks
// the sim promises: every way is used, one meter has no price, and one
// meter is billed off its card price.
func TestRateCardsJoinUsage(t *testing.T) {
	s, ts := setup(t, sim.Options{})
	rows := s.Rows(usageQuery("2024-01-01", "2027-01-01", tally.Year))
	paren := regexp.MustCompile(`\(([^)]+)\)$`)
	how := map[string]string{} // meter → how it matched
	variance := map[string]bool{}
	for id := range paymentMethods(t, ts.URL) {
		var rc rateCardJSON
		getJSON(t, ts.URL+"/api/v1/organization/paymentMethods/"+id+"/rateCard", &rc)
		if rc.Kind != "RateCard" || rc.Metadata.PaymentMethodID != id || rc.Metadata.ProductPublicationID == "" ||
			rc.Metadata.ProductPublicationName == "" || rc.Metadata.IsPrivateOffer == nil || rc.Spec.Currency == "" {
			t.Fatalf("rate card of %s: %+v", id, rc)
		}
		for _, e := range rc.Spec.RateCard {
			for _, p := range e.Prices {
				if !sixDecimals.MatchString(p.Price.String()) {
					t.Errorf("price %s of %s has more than 6 decimals", p.Price, p.Name)
				}
				for _, lp := range p.LocationPrices {
					if lp.LocationGroup == "" || !sixDecimals.MatchString(lp.Price.String()) {
						t.Errorf("location price %+v", lp)
					}
				}
			}
		}
		for _, r := range rows {
			if r.PaymentMethod != id || r.Price == nil {
				continue
			}
			if r.Currency != rc.Spec.Currency {
				t.Fatalf("usage of %s in %s, rate card in %s", id, r.Currency, rc.Spec.Currency)
			}
			var found, way string
			for _, e := range rc.Spec.RateCard {
				for _, p := range e.Prices {
					switch {
					case way != "sku" && r.MeterSku != "" && p.Sku == r.MeterSku:
						found, way = p.Price.String(), "sku"
					case way == "" && paren.FindStringSubmatch(p.Name) != nil && paren.FindStringSubmatch(p.Name)[1] == r.MeterName:
						found, way = p.Price.String(), "parentheses"
					case way == "" && p.Name == r.MeterName:
						found, way = p.Price.String(), "name"
					}
				}
			}
			how[r.MeterName] = way
			if way == "" {
				continue
			}
			card := tally.MustDecimal(found).Float64()
			if diff := *r.Price/card - 1; diff > 0.02 && diff < 0.04 {
				variance[r.MeterName] = true
			} else if diff < -1e-12 || diff > 1e-12 {
				t.Errorf("%s billed at %g, card %s: off by %.2f%%", r.MeterName, *r.Price, found, diff*100)
			}
		}
	}
	ways := map[string][]string{}
	for m, w := range how {
		ways[w] = append(ways[w], m)
	}
	for _, w := range []string{"sku", "parentheses", "name", ""} {
		if len(ways[w]) == 0 {
			t.Errorf("no meter matched by %q; matches %v", w, ways)
		}
	}
	if len(variance) != 1 {
		t.Errorf("meters billed about 3%% off the card: %v, want exactly one", variance)
	}
}

func TestUsageVariety(t *testing.T) {
	s, _ := setup(t, sim.Options{})
	rows := s.Rows(usageQuery("2025-01-01", "2026-01-01", tally.Month))
	ents, curs := map[string]bool{}, map[string]bool{}
	zero := 0
	for _, r := range rows {
		ents[r.EntitlementType] = true
		curs[r.Currency] = true
		if r.Quantity == 0 {
			zero++
			if r.Price != nil || !r.Cost.IsZero() {
				t.Errorf("a row with no quantity has price %v and cost %s", r.Price, r.Cost)
			}
		}
	}
	for _, e := range []string{"license", "cash", "quantity", "pre-commitment", "", "promotional"} {
		if !ents[e] {
			t.Errorf("no row with entitlementType %q; have %v", e, ents)
		}
	}
	if !curs["USD"] || !curs["EUR"] {
		t.Errorf("currencies %v, want USD and EUR", curs)
	}
	if zero == 0 {
		t.Error("no row with quantity 0")
	}
	for _, r := range rows {
		if r.Entitlement == "" && r.EntitlementType != "" || r.Entitlement != "" && r.EntitlementType == "" {
			t.Fatalf("entitlement %q with type %q", r.Entitlement, r.EntitlementType)
		}
	}
}

// TestPaymentMethodSwitch checks the project that changes payment method
// and currency in the middle of a month, and usage billed to a method past
// its endDate.
func TestPaymentMethodSwitch(t *testing.T) {
	s, ts := setup(t, sim.Options{})
	pms := paymentMethods(t, ts.URL)
	// Start is 2025-01-01: the switch falls on the 15th of the next month.
	day := func(d string) []tally.MeterData {
		q := usageQuery(d, mustDate(d).AddDate(0, 0, 1).Format(tally.DateLayout), tally.Day)
		q.ProjectNames = []string{"sports-live"}
		return s.Rows(q)
	}
	methodOf := func(rows []tally.MeterData) (string, string) {
		if len(rows) == 0 {
			t.Fatal("no rows")
		}
		for _, r := range rows[1:] {
			if r.PaymentMethod != rows[0].PaymentMethod || r.Currency != rows[0].Currency {
				t.Fatalf("one day, two payment methods: %s and %s", rowString(rows[0]), rowString(r))
			}
		}
		return rows[0].PaymentMethod, rows[0].Currency
	}
	before, beforeCur := methodOf(day("2025-02-14"))
	after, afterCur := methodOf(day("2025-02-15"))
	if before == after || beforeCur == afterCur {
		t.Errorf("sports-live on %s %s before the 15th and %s %s from it", before, beforeCur, after, afterCur)
	}
	if start, _ := pms[after].Spec["startDate"].(string); start != "2025-02-15" {
		t.Errorf("the new method starts %q", start)
	}
	month := s.Rows(tally.UsageQuery{Window: tally.Window{Start: mustDate("2025-02-01"), End: mustDate("2025-03-01"), Granularity: tally.Month}, ProjectNames: []string{"sports-live"}})
	methods := map[string]bool{}
	for _, r := range month {
		methods[r.PaymentMethod+r.Currency] = true
	}
	if len(methods) != 2 {
		t.Errorf("February rows of sports-live bill %d method-currency pairs, want 2", len(methods))
	}
	// Usage billed to a method outside its validity.
	outside := 0
	for _, r := range s.Rows(usageQuery("2025-01-01", "2026-01-01", tally.Day)) {
		spec := pms[r.PaymentMethod].Spec
		if end, ok := spec["endDate"].(string); ok && !r.Date.Before(mustDate(end)) {
			outside++
		}
		if start, ok := spec["startDate"].(string); ok && r.Date.Before(mustDate(start)) {
			outside++
		}
	}
	if outside == 0 {
		t.Error("no usage billed outside its payment method's validity")
	}
}

func TestProjects(t *testing.T) {
	early := time.Date(2025, 1, 5, 0, 0, 0, 0, time.UTC)
	_, ts := setup(t, sim.Options{})
	s2, ts2 := setup(t, sim.Options{Now: fixedClock(early)})
	type projectJSON struct {
		Kind     string `json:"kind"`
		Metadata struct {
			ID, Name, DisplayName, CreatedByName, CreatedByID string
			Cloud                                             struct{ Name, DisplayName string }
		} `json:"metadata"`
		Spec struct {
			Name, DisplayName, LocationID, LocationName string
			IsActive                                    *bool
			AssignedPaymentMethodID                     *string
		} `json:"spec"`
	}
	list := func(base string) map[string]projectJSON {
		var p struct{ Value []projectJSON }
		getJSON(t, base+"/api/v1/projects", &p)
		out := map[string]projectJSON{}
		for _, pr := range p.Value {
			if pr.Metadata.ID == "" || pr.Spec.Name != pr.Metadata.Name || pr.Spec.LocationID == "" || pr.Spec.IsActive == nil || pr.Metadata.Cloud.Name == "" {
				t.Errorf("project %+v", pr)
			}
			out[pr.Spec.Name] = pr
		}
		return out
	}
	now := list(ts.URL)
	if len(now) < 5 {
		t.Fatalf("%d projects", len(now))
	}
	if sb := now["sandbox"]; *sb.Spec.IsActive || sb.Spec.AssignedPaymentMethodID != nil {
		t.Errorf("sandbox: active %v, payment method %v; want inactive with none", *sb.Spec.IsActive, sb.Spec.AssignedPaymentMethodID)
	}
	then := list(ts2.URL)
	if _, ok := then["training"]; ok {
		t.Error("training is listed before it was created")
	}
	if *then["sports-live"].Spec.AssignedPaymentMethodID == *now["sports-live"].Spec.AssignedPaymentMethodID {
		t.Error("sports-live's assigned payment method did not change")
	}
	q := usageQuery("2025-01-01", "2025-01-05", tally.Day)
	q.ProjectNames = []string{"training"}
	if rows := s2.Rows(q); len(rows) != 0 {
		t.Errorf("%d usage rows for a project not yet created", len(rows))
	}
}

func TestProjectUsage(t *testing.T) {
	now := time.Date(2025, 6, 17, 13, 0, 0, 0, time.UTC)
	s, ts := setup(t, sim.Options{Now: fixedClock(now)})
	var rep struct {
		Supplemental struct {
			Records int    `json:"records"`
			Start   string `json:"start"`
			End     string `json:"end"`
			Project string `json:"project"`
		} `json:"supplemental"`
		Value []struct {
			MeterName, Unit, Solution, Family string
			Quantity                          json.Number
		} `json:"value"`
	}
	getJSON(t, ts.URL+"/api/v1/projects/newsroom/usage", &rep)
	if rep.Supplemental.Project != "newsroom" || rep.Supplemental.Records != len(rep.Value) || rep.Supplemental.Start != "2025-06-01" {
		t.Errorf("supplemental %+v", rep.Supplemental)
	}
	q := tally.UsageQuery{Window: tally.Window{Start: mustDate("2025-06-01"), End: mustDate("2025-07-01"), Granularity: tally.Month}, ProjectNames: []string{"newsroom"}}
	want := map[string]int64{}
	for _, r := range s.Rows(q) {
		want[r.MeterName] += q4(r.Quantity)
	}
	got := map[string]int64{}
	for _, v := range rep.Value {
		r, ok := new(big.Rat).SetString(v.Quantity.String())
		if !ok || v.Family == "" || v.Solution == "" {
			t.Fatalf("item %+v", v)
		}
		got[v.MeterName] = new(big.Rat).Mul(r, big.NewRat(10000, 1)).Num().Int64()
	}
	if len(got) != len(want) || len(got) == 0 {
		t.Fatalf("meters %v, want %v", keys(got), keys(want))
	}
	for m, w := range want {
		if got[m] != w {
			t.Errorf("%s: month to date %d, rows %d (×10^-4)", m, got[m], w)
		}
	}
}

func keys(m map[string]int64) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func TestLocationsAndOrganization(t *testing.T) {
	_, ts := setup(t, sim.Options{})
	var raw map[string]json.RawMessage
	getJSON(t, ts.URL+"/api/v1/locations", &raw)
	if len(raw) != 2 || raw["kind"] == nil || raw["value"] == nil {
		t.Errorf("locations answer has keys %v, want kind and value only", raw)
	}
	var locs struct {
		Value []struct {
			Metadata struct{ ID, Name, DisplayName string }
			Spec     struct {
				Type  string
				Cloud struct {
					Name, DisplayName string
					Region            struct{ Name, DisplayName string }
				}
				Organization *struct{ Name, ID string }
			}
		}
	}
	getJSON(t, ts.URL+"/api/v1/locations", &locs)
	types := map[string]bool{}
	for _, l := range locs.Value {
		types[l.Spec.Type] = true
		if l.Metadata.ID == "" || l.Metadata.Name == "" || l.Spec.Cloud.Region.Name == "" {
			t.Errorf("location %+v", l)
		}
		if (l.Spec.Type == "Dedicated") != (l.Spec.Organization != nil) {
			t.Errorf("location %s of type %s: organization %v", l.Metadata.Name, l.Spec.Type, l.Spec.Organization)
		}
	}
	if !types["SaaS"] || !types["Dedicated"] {
		t.Errorf("location types %v", types)
	}
	var org struct {
		Kind     string
		Metadata struct {
			ID       string
			IsActive *bool
		}
		Spec struct{ Name string }
	}
	getJSON(t, ts.URL+"/api/v1/organization", &org)
	if org.Metadata.ID == "" || org.Metadata.IsActive == nil || org.Spec.Name == "" {
		t.Errorf("organization %+v", org)
	}
	for _, r := range []string{"/api/v1/organization", "/api/v1/locations"} {
		resp := do(t, http.MethodGet, ts.URL+r, "", "")
		resp.Body.Close()
		if !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
			t.Errorf("%s: Content-Type %q", r, resp.Header.Get("Content-Type"))
		}
	}
}
