package sim

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/tally-dev/tally"
)

const (
	maxTop     = 1000
	adminEmail = "admin@example.com"
	adminName  = "Ada Admin"
)

type listEnvelope struct {
	Value        []any            `json:"value"`
	Supplemental listSupplemental `json:"supplemental"`
	NextLink     string           `json:"@odata.nextLink,omitempty"`
}

type listSupplemental struct {
	Kind       string     `json:"kind"`
	Count      int        `json:"count"`
	Operation  string     `json:"operation"`
	Pagination pagination `json:"pagination"`
}

// pagination positions are 1-based and inclusive: a page holding the 3rd
// to 4th items says start 3, end 4. An empty page says end = start - 1.
type pagination struct {
	Start   int `json:"start"`
	End     int `json:"end"`
	Records int `json:"records"`
	Total   int `json:"total"`
}

func listToken(offset int) string {
	return base64.RawURLEncoding.EncodeToString([]byte("list:" + strconv.Itoa(offset)))
}

// writeList answers one page of items, honouring $top and $skiptoken.
func (s *Server) writeList(x *exchange, kind string, items []any) {
	qv := x.r.URL.Query()
	size := s.opts.PageSize
	top := qv.Get("$top")
	if qv.Has("$top") {
		n, err := strconv.Atoi(top)
		if err != nil || n < 1 || n > maxTop {
			s.writeError(x.w, http.StatusBadRequest, "InvalidRequest", fmt.Sprintf("$top %q must be a whole number from 1 to %d", top, maxTop),
				map[string]any{"field": "$top", "value": top})
			return
		}
		size = n
	}
	offset := 0
	if qv.Has("$skiptoken") {
		b, err := base64.RawURLEncoding.DecodeString(qv.Get("$skiptoken"))
		rest, ok := strings.CutPrefix(string(b), "list:")
		n, aerr := strconv.Atoi(rest)
		if err != nil || !ok || aerr != nil || n < 0 {
			s.writeError(x.w, http.StatusBadRequest, "InvalidRequest", "$skiptoken is not one this service issued; follow @odata.nextLink unchanged",
				map[string]any{"field": "$skiptoken"})
			return
		}
		offset = n
	}
	lo, hi := min(offset, len(items)), min(offset+size, len(items))
	page := items[lo:hi]
	env := listEnvelope{
		Value: append([]any{}, page...),
		Supplemental: listSupplemental{Kind: kind, Count: len(page), Operation: "list",
			Pagination: pagination{Start: lo + 1, End: lo + len(page), Records: len(page), Total: len(items)}},
	}
	if hi < len(items) {
		link := fmt.Sprintf("%s://%s%s?", scheme(x.r), x.r.Host, x.r.URL.Path)
		if qv.Has("$top") {
			link += "$top=" + top + "&"
		}
		env.NextLink = link + "$skiptoken=" + listToken(hi)
	}
	s.writeJSON(x, env)
}

func dateOrNil(t *time.Time) any {
	if t == nil {
		return nil
	}
	return t.Format(tally.DateLayout)
}

func (s *Server) now() time.Time { return s.opts.Now().UTC() }

// paymentMethodJSON is a PaymentMethodSummarySchema: the common spec fields
// plus the variant's own.
func (s *Server) paymentMethodJSON(i int, now time.Time) map[string]any {
	c := s.cat
	pm := c.pms[i]
	spec := map[string]any{
		"type":                       pm.typ,
		"autoPurchaseStreamLicenses": pm.typ == "marketplaceB",
		"startDate":                  dateOrNil(pm.startDate),
		"endDate":                    dateOrNil(pm.endDate),
		"productPublicationName":     pm.publication,
		"allowedOrganizations":       []string{c.orgID},
		"notes":                      "Billed in " + pm.currency + ".",
	}
	for k, v := range pm.spec {
		spec[k] = v
	}
	projects := []string{}
	for p := range c.projects {
		if !c.projects[p].created.After(now) && c.paymentMethodAt(p, now.Unix()) == i {
			projects = append(projects, c.projects[p].name)
		}
	}
	return map[string]any{
		"metadata": map[string]any{
			"id": pm.id, "organizationId": c.orgID, "created": pm.created.Format(time.RFC3339),
			"createdBy": c.userID, "createdByEmail": adminEmail, "displayName": pm.name,
		},
		"related": map[string]any{"projects": projects},
		"spec":    spec,
		"status":  map[string]any{"isActive": pm.active, "termsAndConditionsAccepted": true},
	}
}

// paymentMethod finds the payment method of x's first path parameter that
// exists at now, or answers 404.
func (s *Server) paymentMethod(x *exchange, now time.Time) (int, bool) {
	id := x.params[0]
	i, ok := s.cat.pmByID[id]
	if !ok || s.cat.pms[i].created.After(now) {
		s.writeError(x.w, http.StatusNotFound, "NotFound", fmt.Sprintf("payment method %q does not exist in this organization", id),
			map[string]any{"paymentMethodId": id})
		return 0, false
	}
	return i, true
}

func (s *Server) handlePaymentMethods(x *exchange) {
	now := s.now()
	var items []any
	for i, pm := range s.cat.pms {
		if !pm.created.After(now) {
			items = append(items, s.paymentMethodJSON(i, now))
		}
	}
	s.writeList(x, "PaymentMethod", items)
}

func (s *Server) handlePaymentMethod(x *exchange) {
	now := s.now()
	if i, ok := s.paymentMethod(x, now); ok {
		s.writeJSON(x, s.paymentMethodJSON(i, now))
	}
}

// priceNumber renders a price scaled by 10^6 as a JSON number with at most
// 6 decimals.
func priceNumber(v int64) json.Number {
	s := strings.TrimRight(fixed(v, 6), "0")
	return json.Number(strings.TrimSuffix(s, "."))
}

func (s *Server) handleRateCard(x *exchange) {
	i, ok := s.paymentMethod(x, s.now())
	if !ok {
		return
	}
	pm := s.cat.pms[i]
	var entries []any
	for _, e := range rateCardEntries {
		var prices []any
		for _, p := range e.prices {
			item := map[string]any{
				"name": p.name, "displayName": p.displayName, "sku": p.sku, "unit": p.unit,
				"price": priceNumber(p.price[pm.currency]),
			}
			if len(p.locations) > 0 {
				var locs []any
				for _, l := range p.locations {
					var sku any
					if l.sku != "" {
						sku = l.sku
					}
					locs = append(locs, map[string]any{"locationGroup": l.group, "sku": sku, "price": priceNumber(l.price[pm.currency])})
				}
				item["locationPrices"] = locs
			}
			prices = append(prices, item)
		}
		entries = append(entries, map[string]any{"family": e.family, "solution": e.solution, "prices": prices})
	}
	s.writeJSON(x, map[string]any{
		"kind": "RateCard",
		"metadata": map[string]any{
			"paymentMethodId": pm.id, "productPublicationId": pm.publicationID,
			"productPublicationName": pm.publication, "isPrivateOffer": pm.privateOffer,
		},
		"spec": map[string]any{"currency": pm.currency, "rateCard": entries},
	})
}

func (s *Server) projectJSON(p int, now time.Time) map[string]any {
	c := s.cat
	pr := c.projects[p]
	loc := c.locations[pr.location]
	var assigned any
	if pm := c.paymentMethodAt(p, now.Unix()); pm >= 0 {
		assigned = c.pms[pm].id
	}
	return map[string]any{
		"kind": "Project",
		"metadata": map[string]any{
			"id": pr.id, "name": pr.name, "displayName": pr.displayName,
			"createdByName": adminName, "createdById": c.userID, "createdBy": c.userID, "createdByEmail": adminEmail,
			"created": pr.created.Format(time.RFC3339), "updated": pr.created.Format(time.RFC3339),
			"cloud": map[string]any{"name": loc.cloud, "displayName": loc.cloudDisplay, "id": c.uuid("cloud/" + loc.cloud)},
		},
		"spec": map[string]any{
			"name": pr.name, "displayName": pr.displayName, "isActive": pr.active,
			"locationId": loc.id, "locationName": loc.name, "locationDisplayName": loc.displayName,
			"assignedPaymentMethodId": assigned,
		},
	}
}

func (s *Server) handleProjects(x *exchange) {
	now := s.now()
	var items []any
	for p, pr := range s.cat.projects {
		if !pr.created.After(now) {
			items = append(items, s.projectJSON(p, now))
		}
	}
	s.writeList(x, "Project", items)
}

// handleProjectUsage answers ProjectUsageReportSchema: the project's
// quantities per meter from the first of the current month to now, as
// currently reported (provisional hours included).
func (s *Server) handleProjectUsage(x *exchange) {
	now := s.now()
	name := x.params[0]
	p, ok := s.cat.projByName[name]
	if !ok || s.cat.projects[p].created.After(now) {
		s.writeError(x.w, http.StatusNotFound, "NotFound", fmt.Sprintf("project %q does not exist in this organization", name),
			map[string]any{"projectName": name})
		return
	}
	from := time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, time.UTC)
	to := from.AddDate(0, 1, 0)
	q := query{start: from, end: to, g: tally.Month, projects: []string{name}}
	byMeter := map[int]int64{}
	var order []int
	s.cat.eachRow(q, now.Unix(), func(r *rowAgg) bool {
		m := s.cat.pairs[r.pair].model.meter
		if _, seen := byMeter[m]; !seen {
			order = append(order, m)
		}
		byMeter[m] += r.q4
		return true
	})
	value := []any{}
	for _, m := range order {
		value = append(value, map[string]any{
			"meterName": meters[m].name, "unit": meters[m].unit, "solution": meters[m].solution,
			"family": meters[m].family, "quantity": json.Number(fixed(byMeter[m], 4)),
		})
	}
	s.writeJSON(x, map[string]any{
		"supplemental": map[string]any{
			"records": len(value), "start": from.Format(tally.DateLayout),
			"end": now.AddDate(0, 0, 1).Format(tally.DateLayout), "project": name,
		},
		"value": value,
	})
}

func (s *Server) handleLocations(x *exchange) {
	c := s.cat
	var value []any
	for _, l := range c.locations {
		spec := map[string]any{
			"type": l.typ,
			"cloud": map[string]any{"name": l.cloud, "displayName": l.cloudDisplay,
				"region": map[string]any{"name": l.region, "displayName": l.regionDisplay}},
		}
		if l.typ == "Dedicated" {
			spec["organization"] = map[string]any{"name": c.orgName, "id": c.orgID}
		}
		value = append(value, map[string]any{
			"metadata": map[string]any{"id": l.id, "name": l.name, "displayName": l.displayName},
			"spec":     spec,
		})
	}
	s.writeJSON(x, map[string]any{"kind": "Location", "value": value})
}

func (s *Server) handleOrganization(x *exchange) {
	c := s.cat
	created := c.start.AddDate(-2, 0, 0).Format(time.RFC3339)
	s.writeJSON(x, map[string]any{
		"kind": "Organization",
		"metadata": map[string]any{
			"id": c.orgID, "name": c.orgName, "isActive": true, "createdByName": adminName, "createdById": c.userID,
			"createdBy": c.userID, "createdByEmail": adminEmail, "created": created, "updated": created,
		},
		"spec": map[string]any{
			"name": c.orgName, "legalEntityName": c.orgName + " Ltd", "legalEntityAddress": "1 Example Street, London",
			"legalEntityContactEmail": "billing@example.com", "legalEntityOfficer": nil,
		},
	})
}
