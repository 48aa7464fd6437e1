package fetch

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/tally-dev/tally"
)

// This file is long (about 640 lines) because it reads every reference
// resource of the interface (organization, payment methods, rate cards,
// projects, locations), one small reader each, as the seed describes them.

// maxDocument bounds a single-resource answer (a payment method, a rate
// card, the organization): such answers are small, and one that is not is
// not what was asked for. A variable only so that a test can reach the
// bound without streaming 32 MiB.
var maxDocument int64 = 32 << 20

// PaymentMethods lists the organization's payment methods, every page.
func (c *Client) PaymentMethods(ctx context.Context) ([]tally.PaymentMethod, error) {
	return listAll(ctx, c, "payment_methods", "payment methods", decodePaymentMethod)
}

// PaymentMethod reads one payment method.
func (c *Client) PaymentMethod(ctx context.Context, id string) (tally.PaymentMethod, error) {
	if err := checkID("payment method id", id); err != nil {
		return tally.PaymentMethod{}, fmt.Errorf("get payment method: %w", err)
	}
	var pm tally.PaymentMethod
	err := c.getDocument(ctx, "payment_method", map[string]string{"id": id}, "payment method "+id, func(raw []byte) error {
		var err error
		pm, err = decodePaymentMethod(raw, 0)
		return err
	})
	if err != nil {
		return tally.PaymentMethod{}, fmt.Errorf("get payment method %s: %w", id, err)
	}
	return pm, nil
}

// RateCard reads a payment method's rate card. Prices are exact: JSON
// numbers are read as their text.
func (c *Client) RateCard(ctx context.Context, paymentMethodID string) (tally.RateCard, error) {
	if err := checkID("payment method id", paymentMethodID); err != nil {
		return tally.RateCard{}, fmt.Errorf("get rate card: %w", err)
	}
	var rc tally.RateCard
	err := c.getDocument(ctx, "rate_card", map[string]string{"id": paymentMethodID}, "rate card "+paymentMethodID, func(raw []byte) error {
		var err error
		rc, err = decodeRateCard(raw)
		return err
	})
	if err != nil {
		return tally.RateCard{}, fmt.Errorf("get rate card of payment method %s: %w", paymentMethodID, err)
	}
	return rc, nil
}

// Projects lists the projects the token can see, every page.
func (c *Client) Projects(ctx context.Context) ([]tally.Project, error) {
	return listAll(ctx, c, "projects", "projects", decodeProject)
}

// Locations lists the locations projects can be created in.
func (c *Client) Locations(ctx context.Context) ([]tally.Location, error) {
	return listAll(ctx, c, "locations", "locations", decodeLocation)
}

// Organization reads the token's organization.
func (c *Client) Organization(ctx context.Context) (tally.Organization, error) {
	var org tally.Organization
	err := c.getDocument(ctx, "organization", nil, "organization", func(raw []byte) error {
		var err error
		org, err = decodeOrganization(raw)
		return err
	})
	if err != nil {
		return tally.Organization{}, fmt.Errorf("get organization: %w", err)
	}
	return org, nil
}

// checkID refuses an id that would not name one resource in a path.
func checkID(what, id string) error {
	if strings.TrimSpace(id) == "" || id == "." || id == ".." {
		return fmt.Errorf("%s %q is not an id", what, id)
	}
	return nil
}

// getDocument GETs one resource and hands its whole body to decode; a body
// cut mid-way is retried like a failed request.
func (c *Client) getDocument(ctx context.Context, key string, vars map[string]string, what string, decode func([]byte) error) error {
	u := c.endpoint(key, vars)
	ctx = withResource(ctx, key)
	return c.withRetry(ctx, nil, what, func(ctx context.Context, _ int) error {
		resp, b, err := c.send(ctx, request{method: http.MethodGet, url: u})
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		data, err := io.ReadAll(io.LimitReader(resp.Body, maxDocument+1))
		if err != nil {
			return readFailure(ctx, b, err)
		}
		if int64(len(data)) > maxDocument {
			return fmt.Errorf("GET %s: answer larger than %d bytes", urlPath(u), maxDocument)
		}
		// A decoder, unlike json.Valid, says io.ErrUnexpectedEOF for a
		// document that stops early, which is a cut answer.
		var raw json.RawMessage
		if err := json.NewDecoder(bytes.NewReader(data)).Decode(&raw); err != nil {
			return readFailure(ctx, b, fmt.Errorf("GET %s: %w", urlPath(u), err))
		}
		if err := checkText(raw); err != nil {
			return fmt.Errorf("GET %s: %w", urlPath(u), err)
		}
		return decode(raw)
	})
}

// listAll reads every page of a list: it follows @odata.nextLink (same
// origin only, never twice), and also stops once the running count reaches
// supplemental.pagination.total, the seed's fallback rule.
func listAll[T any](ctx context.Context, c *Client, key, what string, decode func(json.RawMessage, int) (T, error)) ([]T, error) {
	link := c.endpoint(key, nil)
	ctx = withResource(ctx, key)
	seen := map[string]bool{link: true}
	var out []T
	for page := 1; ; page++ {
		var lp listPage[T]
		err := c.withRetry(ctx, nil, what, func(ctx context.Context, _ int) error {
			resp, b, err := c.send(ctx, request{method: http.MethodGet, url: link})
			if err != nil {
				return err
			}
			defer resp.Body.Close()
			// A list page is bounded like a document: the reference
			// lists are small, and a page of gigabytes is an answer
			// gone wrong, not one to read whole.
			body := &rowBound{r: resp.Body, limit: maxDocument, over: shapef("the page is larger than %d bytes (%d MiB): a list page is never that large, so the answer is not one to read", maxDocument, maxDocument>>20)}
			lp, err = decodeListPage(body, len(out), decode)
			if err != nil && !isDecodeFault(err) {
				return readFailure(ctx, b, err)
			}
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("list %s: page %d: %w", what, page, err)
		}
		out = append(out, lp.items...)
		if lp.next == "" || lp.total > 0 && int64(len(out)) >= lp.total {
			return out, nil
		}
		if page >= maxPages {
			return nil, fmt.Errorf("list %s: more than %d pages: stopped", what, maxPages)
		}
		nu, err := c.nextURL(link, lp.next)
		if err != nil {
			return nil, fmt.Errorf("list %s: page %d: %w", what, page, err)
		}
		if seen[nu] {
			return nil, fmt.Errorf("list %s: page %d: next link %s was already followed: the interface is paging in a loop", what, page, redactURL(nu))
		}
		seen[nu] = true
		link = nu
	}
}

// listPage is one decoded page of a list.
type listPage[T any] struct {
	items []T
	next  string
	total int64
}

// decodeListPage decodes one list envelope, item by item; before is the
// number of items of earlier pages, for error messages.
func decodeListPage[T any](r io.Reader, before int, decode func(json.RawMessage, int) (T, error)) (listPage[T], error) {
	var lp listPage[T]
	env := newEnvelope(r)
	for {
		ok, err := env.more()
		if err != nil {
			return listPage[T]{}, err
		}
		if !ok {
			break
		}
		var raw json.RawMessage
		if err := env.dec.Decode(&raw); err != nil {
			return listPage[T]{}, err
		}
		n := before + len(lp.items) + 1
		if err := checkText(raw); err != nil {
			// encoding/json would turn the bytes into U+FFFD without a
			// word: a project renamed in storage, one that does not exist.
			return listPage[T]{}, fmt.Errorf("item %d: %w", n, err)
		}
		it, err := decode(raw, n)
		if err != nil {
			return listPage[T]{}, err
		}
		lp.items = append(lp.items, it)
	}
	lp.next, lp.total = env.next, env.total
	return lp, nil
}

// itemError is an item of a list or a document that does not decode.
func itemError(what string, n int, id string, err error) error {
	var where string
	switch {
	case n > 0 && id != "":
		where = fmt.Sprintf("%s %d (id %s)", what, n, id)
	case n > 0:
		where = fmt.Sprintf("%s %d", what, n)
	case id != "":
		where = fmt.Sprintf("%s %s", what, id)
	default:
		where = what
	}
	return shapef("%s: %v", where, err)
}

type paymentMethodJSON struct {
	Metadata struct {
		ID             string `json:"id"`
		OrganizationID string `json:"organizationId"`
		Created        string `json:"created"`
		DisplayName    string `json:"displayName"`
	} `json:"metadata"`
	Spec    json.RawMessage `json:"spec"`
	Related struct {
		Projects []string `json:"projects"`
	} `json:"related"`
	Status struct {
		IsActive                   bool `json:"isActive"`
		TermsAndConditionsAccepted bool `json:"termsAndConditionsAccepted"`
	} `json:"status"`
}

// paymentMethodSpecJSON holds the fields common to every spec variant.
type paymentMethodSpecJSON struct {
	Type                   string `json:"type"`
	StartDate              string `json:"startDate"`
	EndDate                string `json:"endDate"`
	ProductPublicationName string `json:"productPublicationName"`
	SalesOrderNumber       string `json:"salesOrderNumber"`
	Notes                  string `json:"notes"`
}

// decodePaymentMethod decodes one PaymentMethodSummary; n is its position in
// a list (0 for a single one). A spec type Tally does not know is kept.
func decodePaymentMethod(raw json.RawMessage, n int) (tally.PaymentMethod, error) {
	var j paymentMethodJSON
	if err := json.Unmarshal(raw, &j); err != nil {
		return tally.PaymentMethod{}, itemError("payment method", n, "", err)
	}
	id := j.Metadata.ID
	fail := func(format string, args ...any) (tally.PaymentMethod, error) {
		return tally.PaymentMethod{}, itemError("payment method", n, id, fmt.Errorf(format, args...))
	}
	if id == "" {
		return fail("metadata.id is missing")
	}
	pm := tally.PaymentMethod{
		ID:                         id,
		OrganizationID:             j.Metadata.OrganizationID,
		DisplayName:                j.Metadata.DisplayName,
		Projects:                   j.Related.Projects,
		IsActive:                   j.Status.IsActive,
		TermsAndConditionsAccepted: j.Status.TermsAndConditionsAccepted,
		Type:                       "direct",
		Raw:                        append(json.RawMessage(nil), raw...),
	}
	var err error
	if pm.Created, err = optionalTime(j.Metadata.Created); err != nil {
		return fail("metadata.created %q is not a date-time", j.Metadata.Created)
	}
	if len(j.Spec) > 0 && string(j.Spec) != "null" {
		pm.Spec = append(json.RawMessage(nil), j.Spec...)
		var s paymentMethodSpecJSON
		if err := json.Unmarshal(j.Spec, &s); err != nil {
			return fail("spec: %v", err)
		}
		if s.Type != "" {
			pm.Type = s.Type
		}
		pm.ProductPublicationName = s.ProductPublicationName
		pm.SalesOrderNumber = s.SalesOrderNumber
		pm.Notes = s.Notes
		if pm.StartDate, err = optionalTime(s.StartDate); err != nil {
			return fail("spec.startDate %q is not a date", s.StartDate)
		}
		if pm.EndDate, err = optionalTime(s.EndDate); err != nil {
			return fail("spec.endDate %q is not a date", s.EndDate)
		}
		if pm.AutoPurchaseStreamLicenses, err = autoPurchase(j.Spec); err != nil {
			return fail("spec: %v", err)
		}
	}
	return pm, nil
}

// autoPurchase reads autoPurchaseStreamLicenses. The live interface puts a
// product name where the seed writes "Stream", so any
// autoPurchase…StreamLicenses key is taken.
func autoPurchase(spec json.RawMessage) (bool, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(spec, &m); err != nil {
		return false, err
	}
	for k, v := range m {
		if !strings.HasPrefix(k, "autoPurchase") || !strings.HasSuffix(k, "StreamLicenses") {
			continue
		}
		var b *bool
		if err := json.Unmarshal(v, &b); err != nil {
			return false, fmt.Errorf("%s %s is not a boolean", k, v)
		}
		return b != nil && *b, nil
	}
	return false, nil
}

// optionalTime parses a nullable date or date-time; "" (null) is nil.
func optionalTime(s string) (*time.Time, error) {
	if s == "" {
		return nil, nil
	}
	t, err := parseTimestamp(s)
	if err != nil {
		return nil, err
	}
	return &t, nil
}

type rateCardJSON struct {
	Metadata struct {
		PaymentMethodID        string `json:"paymentMethodId"`
		ProductPublicationID   string `json:"productPublicationId"`
		ProductPublicationName string `json:"productPublicationName"`
		IsPrivateOffer         bool   `json:"isPrivateOffer"`
	} `json:"metadata"`
	Spec struct {
		Currency string `json:"currency"`
		RateCard []struct {
			Family   string `json:"family"`
			Solution string `json:"solution"`
			Prices   []struct {
				Name           string          `json:"name"`
				DisplayName    string          `json:"displayName"`
				Sku            string          `json:"sku"`
				Unit           string          `json:"unit"`
				Price          json.RawMessage `json:"price"`
				LocationPrices []struct {
					LocationGroup string          `json:"locationGroup"`
					Sku           string          `json:"sku"`
					Price         json.RawMessage `json:"price"`
				} `json:"locationPrices"`
			} `json:"prices"`
		} `json:"rateCard"`
	} `json:"spec"`
}

// decodeRateCard decodes a PaymentsMethodRateCard; every price is exact.
func decodeRateCard(raw json.RawMessage) (tally.RateCard, error) {
	var j rateCardJSON
	if err := json.Unmarshal(raw, &j); err != nil {
		return tally.RateCard{}, itemError("rate card", 0, "", err)
	}
	rc := tally.RateCard{
		PaymentMethodID:        j.Metadata.PaymentMethodID,
		ProductPublicationID:   j.Metadata.ProductPublicationID,
		ProductPublicationName: j.Metadata.ProductPublicationName,
		IsPrivateOffer:         j.Metadata.IsPrivateOffer,
		Currency:               j.Spec.Currency,
		Raw:                    append(json.RawMessage(nil), raw...),
	}
	// A price is a JSON number, read as its exact text; a number sent
	// as a string is taken too.
	price := func(where string, raw json.RawMessage) (tally.Decimal, error) {
		fail := func(format string, args ...any) (tally.Decimal, error) {
			return tally.Decimal{}, itemError("rate card", 0, rc.PaymentMethodID, fmt.Errorf("%s: %s", where, fmt.Sprintf(format, args...)))
		}
		text := string(bytes.TrimSpace(raw))
		if text == "" || text == "null" {
			return fail("price is missing")
		}
		if strings.HasPrefix(text, `"`) {
			if err := json.Unmarshal(raw, &text); err != nil {
				return fail("price %s is not a number", raw)
			}
		}
		d, err := tally.ParseDecimal(text)
		if err != nil {
			return fail("price %q is not a decimal number", text)
		}
		return d, nil
	}
	for i, e := range j.Spec.RateCard {
		entry := tally.RateCardEntry{Family: e.Family, Solution: e.Solution}
		for k, p := range e.Prices {
			where := fmt.Sprintf("entry %d (%s/%s) price %d (%s)", i+1, e.Family, e.Solution, k+1, p.Name)
			v, err := price(where, p.Price)
			if err != nil {
				return tally.RateCard{}, err
			}
			rp := tally.RateCardPrice{Name: p.Name, DisplayName: p.DisplayName, Sku: p.Sku, Unit: p.Unit, Price: v}
			for m, lp := range p.LocationPrices {
				lv, err := price(fmt.Sprintf("%s location price %d (%s)", where, m+1, lp.LocationGroup), lp.Price)
				if err != nil {
					return tally.RateCard{}, err
				}
				rp.LocationPrices = append(rp.LocationPrices, tally.LocationPrice{LocationGroup: lp.LocationGroup, Sku: lp.Sku, Price: lv})
			}
			entry.Prices = append(entry.Prices, rp)
		}
		rc.Entries = append(rc.Entries, entry)
	}
	return rc, nil
}

type projectJSON struct {
	Metadata struct {
		ID          string `json:"id"`
		Name        string `json:"name"`
		DisplayName string `json:"displayName"`
	} `json:"metadata"`
	Spec struct {
		Name                    string `json:"name"`
		DisplayName             string `json:"displayName"`
		IsActive                bool   `json:"isActive"`
		LocationID              string `json:"locationId"`
		LocationName            string `json:"locationName"`
		AssignedPaymentMethodID string `json:"assignedPaymentMethodId"`
	} `json:"spec"`
}

// decodeProject decodes a ProjectGet. The spec's name is required by the
// schema, the metadata's optional: spec first.
func decodeProject(raw json.RawMessage, n int) (tally.Project, error) {
	var j projectJSON
	if err := json.Unmarshal(raw, &j); err != nil {
		return tally.Project{}, itemError("project", n, "", err)
	}
	if j.Metadata.ID == "" {
		return tally.Project{}, itemError("project", n, "", fmt.Errorf("metadata.id is missing"))
	}
	return tally.Project{
		ID:                      j.Metadata.ID,
		Name:                    firstOf(j.Spec.Name, j.Metadata.Name),
		DisplayName:             firstOf(j.Spec.DisplayName, j.Metadata.DisplayName),
		IsActive:                j.Spec.IsActive,
		LocationID:              j.Spec.LocationID,
		LocationName:            j.Spec.LocationName,
		AssignedPaymentMethodID: j.Spec.AssignedPaymentMethodID,
		Raw:                     append(json.RawMessage(nil), raw...),
	}, nil
}

type locationJSON struct {
	Metadata struct {
		ID          string `json:"id"`
		Name        string `json:"name"`
		DisplayName string `json:"displayName"`
	} `json:"metadata"`
	Spec struct {
		Type  string `json:"type"`
		Cloud struct {
			Name   string `json:"name"`
			Region struct {
				Name string `json:"name"`
			} `json:"region"`
		} `json:"cloud"`
	} `json:"spec"`
}

// decodeLocation decodes a LocationSchema_v1.
func decodeLocation(raw json.RawMessage, n int) (tally.Location, error) {
	var j locationJSON
	if err := json.Unmarshal(raw, &j); err != nil {
		return tally.Location{}, itemError("location", n, "", err)
	}
	if j.Metadata.ID == "" && j.Metadata.Name == "" {
		return tally.Location{}, itemError("location", n, "", fmt.Errorf("metadata.id and metadata.name are both missing"))
	}
	return tally.Location{
		ID:          j.Metadata.ID,
		Name:        j.Metadata.Name,
		DisplayName: j.Metadata.DisplayName,
		Type:        j.Spec.Type,
		CloudName:   j.Spec.Cloud.Name,
		RegionName:  j.Spec.Cloud.Region.Name,
		Raw:         append(json.RawMessage(nil), raw...),
	}, nil
}

type organizationJSON struct {
	Metadata struct {
		ID   string `json:"id"`
		Name string `json:"name"`
	} `json:"metadata"`
	Spec struct {
		Name string `json:"name"`
	} `json:"spec"`
}

// decodeOrganization decodes an OrganizationSchema.
func decodeOrganization(raw json.RawMessage) (tally.Organization, error) {
	var j organizationJSON
	if err := json.Unmarshal(raw, &j); err != nil {
		return tally.Organization{}, itemError("organization", 0, "", err)
	}
	if j.Metadata.ID == "" {
		return tally.Organization{}, itemError("organization", 0, "", fmt.Errorf("metadata.id is missing"))
	}
	return tally.Organization{
		ID:   j.Metadata.ID,
		Name: firstOf(j.Spec.Name, j.Metadata.Name),
		Raw:  append(json.RawMessage(nil), raw...),
	}, nil
}

func firstOf(vals ...string) string {
	for _, v := range vals {
		if v != "" {
			return v
		}
	}
	return ""
}

// ProjectUsage reads one project's usage report
// (ProjectUsageReportSchema): its month to date per meter, quantities
// only. The count in supplemental.records must match the meters read, so
// a shortened answer is never taken for a quiet month.
func (c *Client) ProjectUsage(ctx context.Context, project string) (tally.ProjectUsage, error) {
	if strings.TrimSpace(project) == "" {
		return tally.ProjectUsage{}, fmt.Errorf("get project usage: the project name is empty")
	}
	var pu tally.ProjectUsage
	err := c.getDocument(ctx, "project_usage", map[string]string{"project_name": project}, "usage of project "+project, func(raw []byte) error {
		var err error
		pu, err = decodeProjectUsage(raw, project)
		return err
	})
	if err != nil {
		return tally.ProjectUsage{}, fmt.Errorf("get usage of project %s: %w", project, err)
	}
	return pu, nil
}

type projectUsageJSON struct {
	Supplemental *struct {
		Records *int   `json:"records"`
		Start   string `json:"start"`
		End     string `json:"end"`
		Project string `json:"project"`
	} `json:"supplemental"`
	Value *[]struct {
		MeterName string      `json:"meterName"`
		Unit      string      `json:"unit"`
		Solution  string      `json:"solution"`
		Family    string      `json:"family"`
		Quantity  json.Number `json:"quantity"`
	} `json:"value"`
}

func decodeProjectUsage(raw []byte, project string) (tally.ProjectUsage, error) {
	var doc projectUsageJSON
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil {
		return tally.ProjectUsage{}, fmt.Errorf("project usage: %w", err)
	}
	if doc.Supplemental == nil || doc.Value == nil || doc.Supplemental.Records == nil {
		return tally.ProjectUsage{}, fmt.Errorf("project usage: supplemental (records, start, end) and value are required")
	}
	sup := doc.Supplemental
	pu := tally.ProjectUsage{Project: project}
	var err error
	if pu.Start, err = reportDate(sup.Start); err != nil {
		return tally.ProjectUsage{}, fmt.Errorf("project usage: supplemental.start %q: %w", sup.Start, err)
	}
	if pu.End, err = reportDate(sup.End); err != nil {
		return tally.ProjectUsage{}, fmt.Errorf("project usage: supplemental.end %q: %w", sup.End, err)
	}
	if !pu.End.After(pu.Start) {
		return tally.ProjectUsage{}, fmt.Errorf("project usage: supplemental.end %s is not after start %s", sup.End, sup.Start)
	}
	if sup.Project != "" && sup.Project != project {
		return tally.ProjectUsage{}, fmt.Errorf("project usage: the answer is for project %q, not %q", sup.Project, project)
	}
	if *sup.Records != len(*doc.Value) {
		return tally.ProjectUsage{}, fmt.Errorf("project usage: supplemental.records says %d, the answer holds %d", *sup.Records, len(*doc.Value))
	}
	for i, v := range *doc.Value {
		if v.MeterName == "" {
			return tally.ProjectUsage{}, fmt.Errorf("project usage: value[%d].meterName is empty", i)
		}
		q, err := tally.ParseDecimal(v.Quantity.String())
		if err != nil {
			return tally.ProjectUsage{}, fmt.Errorf("project usage: value[%d].quantity %q is not a number", i, v.Quantity.String())
		}
		pu.Meters = append(pu.Meters, tally.ProjectMeterUsage{MeterName: v.MeterName, Unit: v.Unit, Solution: v.Solution, Family: v.Family, Quantity: q})
	}
	return pu, nil
}

// reportDate reads a report's period bound: a date, or an RFC 3339 time
// (which must fall on midnight UTC).
func reportDate(s string) (time.Time, error) {
	if t, err := tally.ParseDate(s); err == nil {
		return t, nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("not a date YYYY-MM-DD or an RFC 3339 time")
	}
	return t.UTC(), nil
}

// checkText refuses an item or document whose text is not UTF-8, or holds
// U+FFFD, the mark of text some hop already mangled: stored, it would name
// a project, payment method or rate card entry that does not exist.
func checkText(raw []byte) error {
	if !utf8.Valid(raw) {
		return errors.New("holds text that is not UTF-8; the interface must send names as UTF-8")
	}
	if bytes.Contains(raw, []byte("\uFFFD")) || bytes.Contains(raw, []byte("\\ufffd")) || bytes.Contains(raw, []byte("\\uFFFD")) {
		return errors.New("holds U+FFFD, the replacement character: its text was mangled before it arrived")
	}
	return nil
}
