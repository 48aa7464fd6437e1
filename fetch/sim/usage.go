package sim

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/tally-dev/tally"
)

// usageRequest is CustomerUsageQueryData as sent.
type usageRequest struct {
	StartDate            string   `json:"startDate"`
	EndDate              string   `json:"endDate"`
	Granularity          string   `json:"granularity,omitempty"`
	Format               string   `json:"format,omitempty"`
	Download             bool     `json:"download,omitempty"`
	FilterOnReportedDate bool     `json:"filterOnReportedDate,omitempty"`
	GroupBy              []string `json:"groupBy,omitempty"`
	MeterNames           []string `json:"meterNames,omitempty"`
	PaymentMethodIDs     []string `json:"paymentMethodIds,omitempty"`
	ProjectNames         []string `json:"projectNames,omitempty"`
}

// apiError is a 400 the usage validation answers.
type apiError struct {
	code, detail string
	extra        map[string]any
}

func invalid(field string, value any, format string, args ...any) *apiError {
	return &apiError{"InvalidRequest", fmt.Sprintf(format, args...), map[string]any{"field": field, "value": value}}
}

// validate checks a usage request as the interface does and returns the
// query it asks for and its format.
func (s *Server) validate(req usageRequest) (query, string, *apiError) {
	var q query
	date := func(field, v string) (time.Time, *apiError) {
		if v == "" {
			return time.Time{}, invalid(field, v, "%s is required, as a YYYY-MM-DD date", field)
		}
		t, err := parseDay(v)
		if err != nil {
			return time.Time{}, invalid(field, v, "%s %q is not a YYYY-MM-DD date", field, v)
		}
		return t, nil
	}
	var e *apiError
	if q.start, e = date("startDate", req.StartDate); e != nil {
		return q, "", e
	}
	if q.end, e = date("endDate", req.EndDate); e != nil {
		return q, "", e
	}
	if !q.end.After(q.start) {
		return q, "", &apiError{"InvalidRange", fmt.Sprintf("endDate %s must be after startDate %s (endDate is exclusive)", req.EndDate, req.StartDate),
			map[string]any{"startDate": req.StartDate, "endDate": req.EndDate}}
	}
	q.g = tally.Day
	if req.Granularity != "" {
		q.g = tally.Granularity(req.Granularity)
		if !validGranularity(q.g) {
			return q, "", invalid("granularity", req.Granularity, "granularity %q is not one of year, month, week, day, hour", req.Granularity)
		}
	}
	format := "json"
	if req.Format != "" {
		format = req.Format
		if format != "json" && format != "csv" {
			return q, "", invalid("format", req.Format, "format %q is not one of json, csv", req.Format)
		}
	}
	for _, g := range req.GroupBy {
		if g != "meter" {
			return q, "", invalid("groupBy", req.GroupBy, "groupBy %q is not allowed; the only grouping is [\"meter\"]", g)
		}
	}
	if len(req.ProjectNames) > 0 && len(req.PaymentMethodIDs) > 0 {
		return q, "", &apiError{"InvalidRequest", "projectNames and paymentMethodIds are mutually exclusive; send one of them",
			map[string]any{"projectNames": req.ProjectNames, "paymentMethodIds": req.PaymentMethodIDs}}
	}
	for _, id := range req.PaymentMethodIDs {
		if !isUUID(id) {
			return q, "", invalid("paymentMethodIds", id, "paymentMethodIds item %q is not a UUID", id)
		}
	}
	if maxEnd, ok := rangeLimit(q.g, q.start); ok && q.end.After(maxEnd) {
		limit := "31 days"
		if q.g == tally.Day {
			limit = "1 year"
		}
		return q, "", &apiError{"InvalidRange",
			fmt.Sprintf("a %s query may span at most %s: with startDate %s, endDate may be at most %s, not %s",
				q.g, limit, req.StartDate, maxEnd.Format(tally.DateLayout), req.EndDate),
			map[string]any{"granularity": string(q.g), "maxEndDate": maxEnd.Format(tally.DateLayout)}}
	}
	s.mu.Lock()
	refuse := s.faults.RefuseRangeDays
	s.mu.Unlock()
	if days := int(q.end.Sub(q.start).Hours() / 24); refuse > 0 && days > refuse {
		return q, "", &apiError{"InvalidRange",
			fmt.Sprintf("the range %s..%s spans %d days; this service answers at most %d days a query", req.StartDate, req.EndDate, days, refuse),
			map[string]any{"maxDays": refuse}}
	}
	q.reported = req.FilterOnReportedDate
	q.projects, q.pms, q.meters = req.ProjectNames, req.PaymentMethodIDs, req.MeterNames
	return q, format, nil
}

func isUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case i == 8 || i == 13 || i == 18 || i == 23:
			if c != '-' {
				return false
			}
		case '0' <= c && c <= '9', 'a' <= c && c <= 'f', 'A' <= c && c <= 'F':
		default:
			return false
		}
	}
	return true
}

// pageToken is what a usage $skiptoken carries: the whole query, so a GET
// on the next link needs no body, and the rows already answered.
type pageToken struct {
	Query  usageRequest `json:"q"`
	Offset int          `json:"o"`
}

func encodeToken(t pageToken) string {
	b, _ := json.Marshal(t)
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodeToken(s string) (pageToken, bool) {
	var t pageToken
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || json.Unmarshal(b, &t) != nil || t.Offset < 0 {
		return pageToken{}, false
	}
	return t, true
}

const maxBody = 1 << 20

func (s *Server) handleUsage(x *exchange) {
	var req usageRequest
	offset := 0
	haveBody := false
	if x.r.Method == http.MethodPost {
		body, err := io.ReadAll(http.MaxBytesReader(x.w, x.r.Body, maxBody))
		if err != nil {
			s.writeError(x.w, http.StatusBadRequest, "InvalidRequest", "read request body: "+err.Error(), nil)
			return
		}
		if len(bytes.TrimSpace(body)) > 0 {
			haveBody = true
			dec := json.NewDecoder(bytes.NewReader(body))
			if err := dec.Decode(&req); err != nil {
				s.writeError(x.w, http.StatusBadRequest, "InvalidRequest", "the body is not a CustomerUsageQueryData JSON object: "+err.Error(), nil)
				return
			}
		}
	}
	if tok := x.r.URL.Query().Get("$skiptoken"); x.r.URL.Query().Has("$skiptoken") {
		t, ok := decodeToken(tok)
		if !ok {
			s.writeError(x.w, http.StatusBadRequest, "InvalidRequest", "$skiptoken is not one this service issued; follow @odata.nextLink unchanged",
				map[string]any{"field": "$skiptoken"})
			return
		}
		offset = t.Offset
		if !haveBody {
			req, haveBody = t.Query, true
		}
	}
	if !haveBody {
		s.writeError(x.w, http.StatusBadRequest, "InvalidRequest", "the body is empty; send a CustomerUsageQueryData JSON object", nil)
		return
	}
	q, format, e := s.validate(req)
	if e != nil {
		s.writeError(x.w, http.StatusBadRequest, e.code, e.detail, e.extra)
		return
	}
	limit := -1
	if s.opts.UsagePaging && format == "json" {
		limit = s.opts.PageSize
	}
	s.streamUsage(x, req, q, format, offset, limit)
}

// streamUsage writes the answer row by row: only one bucket of rows and one
// encoded row are held at a time.
func (s *Server) streamUsage(x *exchange, req usageRequest, q query, format string, offset, limit int) {
	h := x.w.Header()
	if format == "csv" {
		h.Set("Content-Type", "text/csv")
	} else {
		h.Set("Content-Type", "application/json")
	}
	if req.Download {
		h.Set("Content-Disposition", fmt.Sprintf("attachment; filename=\"usage-%s-%s.%s\"", req.StartDate, req.EndDate, format))
	}
	x.w.WriteHeader(http.StatusOK)
	bw := bufio.NewWriterSize(x.w, 32<<10)
	cutWrite := func(b []byte) {
		bw.Write(b[:len(b)/2])
		bw.Flush()
		abort(x.w)
	}
	var enc rowEncoder
	if format == "csv" {
		enc = newCSVEncoder()
	} else {
		enc = &jsonEncoder{}
	}
	bw.Write(enc.head())
	var held []byte
	n, seen, more := 0, 0, false
	s.cat.eachRow(q, s.opts.Now().Unix(), func(r *rowAgg) bool {
		seen++
		if seen <= offset {
			return true
		}
		if limit >= 0 && n == limit {
			more = true
			return false
		}
		b := enc.row(s.cat, r, n == 0)
		if x.cut {
			// Hold one row back, so the cut falls inside a row even when
			// the answer has fewer rows than the drawn position.
			if held != nil {
				bw.Write(held)
			}
			if n == x.cutAt {
				cutWrite(b)
			}
			held = append(held[:0], b...)
		} else {
			bw.Write(b)
		}
		n++
		return true
	})
	next := ""
	if more {
		next = fmt.Sprintf("%s://%s%s?$skiptoken=%s", scheme(x.r), x.r.Host, x.r.URL.Path, encodeToken(pageToken{req, offset + n}))
	}
	tail := enc.tail(req, q, format, n, next)
	if x.cut {
		if held != nil {
			cutWrite(held)
		}
		cutWrite(tail)
	}
	bw.Write(tail)
	bw.Flush()
}

func scheme(r *http.Request) string {
	if r.TLS != nil {
		return "https"
	}
	return "http"
}

type rowEncoder interface {
	head() []byte
	row(c *catalog, r *rowAgg, first bool) []byte
	tail(req usageRequest, q query, format string, records int, next string) []byte
}

// jsonEncoder writes the CustomerUsageDataJsonSchema envelope by hand, so
// numbers keep their exact text: quantity with 4 decimals, cost as a string
// with 10.
type jsonEncoder struct{ buf []byte }

func (e *jsonEncoder) head() []byte { return []byte(`{"value":[`) }

func (e *jsonEncoder) row(c *catalog, r *rowAgg, first bool) []byte {
	p := c.pairs[r.pair]
	m := meters[p.model.meter]
	pm := c.pms[r.pm]
	b := e.buf[:0]
	if !first {
		b = append(b, ',')
	}
	b = append(b, "\n"+`{"date":"`...)
	b = time.Unix(r.bucket, 0).UTC().AppendFormat(b, time.RFC3339)
	b = append(b, `","dateProcessed":`...)
	if r.processed == uncharged {
		b = append(b, "null"...)
	} else {
		b = append(b, '"')
		b = time.Unix(r.processed, 0).UTC().AppendFormat(b, time.RFC3339)
		b = append(b, '"')
	}
	b = appendField(b, "meterName", m.name, false)
	b = appendField(b, "meterSku", m.sku, true)
	b = appendField(b, "family", m.family, false)
	b = appendField(b, "solution", m.solution, false)
	b = appendField(b, "unit", m.unit, true)
	b = append(b, `,"quantity":`...)
	b = append(b, fixed(r.q4, 4)...)
	b = append(b, `,"price":`...)
	if pr := price(r); pr == nil {
		b = append(b, "null"...)
	} else {
		b = strconv.AppendFloat(b, *pr, 'f', -1, 64)
	}
	b = appendField(b, "cost", fixed(r.cost10, 10), false)
	b = appendField(b, "currency", pm.currency, false)
	ent, typ := "", ""
	if r.ent >= 0 {
		ent, typ = c.ents[r.ent].id, c.ents[r.ent].typ
	}
	b = appendField(b, "entitlement", ent, true)
	b = appendField(b, "entitlementType", typ, true)
	b = appendField(b, "paymentMethod", pm.id, false)
	b = appendField(b, "paymentMethodName", pm.name, true)
	b = appendField(b, "project", c.projects[p.project].name, false)
	b = append(b, '}')
	e.buf = b
	return b
}

// appendField appends ,"name":"value", or null for an empty nullable value.
func appendField(b []byte, name, value string, nullable bool) []byte {
	b = append(b, `,"`...)
	b = append(b, name...)
	b = append(b, `":`...)
	if nullable && value == "" {
		return append(b, "null"...)
	}
	v, _ := json.Marshal(value)
	return append(b, v...)
}

type usageSupplemental struct {
	Records     int          `json:"records"`
	Start       string       `json:"start"`
	End         string       `json:"end"`
	Format      string       `json:"format"`
	Download    bool         `json:"download"`
	Granularity string       `json:"granularity"`
	GroupBy     []string     `json:"groupBy"`
	Filters     usageFilters `json:"filters"`
}

type usageFilters struct {
	ProjectNames     []string `json:"projectNames"`
	PaymentMethodIDs []string `json:"paymentMethodIds"`
	MeterNames       []string `json:"meterNames"`
}

func orEmpty(v []string) []string {
	if v == nil {
		return []string{}
	}
	return v
}

// tail closes the value array with the supplemental, which comes last
// because records is known only once the rows are written.
func (e *jsonEncoder) tail(req usageRequest, q query, format string, records int, next string) []byte {
	sup, _ := json.Marshal(usageSupplemental{
		Records: records, Start: req.StartDate, End: req.EndDate, Format: format, Download: req.Download,
		Granularity: string(q.g), GroupBy: []string{"meter"},
		Filters: usageFilters{orEmpty(req.ProjectNames), orEmpty(req.PaymentMethodIDs), orEmpty(req.MeterNames)},
	})
	b := append([]byte("\n],\"supplemental\":"), sup...)
	if next != "" {
		link, _ := json.Marshal(next)
		b = append(append(b, `,"@odata.nextLink":`...), link...)
	}
	return append(b, "}\n"...)
}

// csvColumns is the CSV header: the MeterData field names.
var csvColumns = []string{"date", "dateProcessed", "meterName", "meterSku", "family", "solution", "unit",
	"quantity", "price", "cost", "currency", "entitlement", "entitlementType", "paymentMethod",
	"paymentMethodName", "project"}

type csvEncoder struct {
	buf    bytes.Buffer
	w      *csv.Writer
	fields []string
}

func newCSVEncoder() *csvEncoder {
	e := &csvEncoder{fields: make([]string, len(csvColumns))}
	e.w = csv.NewWriter(&e.buf)
	return e
}

func (e *csvEncoder) line(fields []string) []byte {
	e.buf.Reset()
	e.w.Write(fields)
	e.w.Flush()
	return e.buf.Bytes()
}

func (e *csvEncoder) head() []byte { return bytes.Clone(e.line(csvColumns)) }

func (e *csvEncoder) row(c *catalog, r *rowAgg, first bool) []byte {
	md := c.meterData(r)
	f := e.fields
	f[0] = md.Date.Format(time.RFC3339)
	f[1] = ""
	if md.DateProcessed != nil {
		f[1] = md.DateProcessed.Format(time.RFC3339)
	}
	f[2], f[3], f[4], f[5], f[6] = md.MeterName, md.MeterSku, md.Family, md.Solution, md.Unit
	f[7] = fixed(r.q4, 4)
	f[8] = ""
	if md.Price != nil {
		f[8] = strconv.FormatFloat(*md.Price, 'f', -1, 64)
	}
	f[9] = fixed(r.cost10, 10)
	f[10], f[11], f[12], f[13], f[14], f[15] = md.Currency, md.Entitlement, md.EntitlementType, md.PaymentMethod, md.PaymentMethodName, md.Project
	return e.line(f)
}

// tail is empty: a CSV answer is its header and rows, with no paging.
func (e *csvEncoder) tail(usageRequest, query, string, int, string) []byte { return nil }
