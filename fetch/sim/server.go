package sim

import (
	"bytes"
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tally-dev/tally"
)

// DefaultToken is the bearer token the sim accepts when Options.Token is
// empty.
const DefaultToken = "sim-token"

// Options configures a simulated interface.
type Options struct {
	// Token is the bearer token every request must carry; "" is DefaultToken.
	Token string
	// Seed decides the data: same seed, same data.
	Seed int64
	// Start is the first day with usage (default 2025-01-01), truncated to
	// midnight UTC.
	Start time.Time
	// Now is the sim's clock (default time.Now). It decides which hours
	// exist and which are charged.
	Now func() time.Time
	// PageSize is the list page size when a request sets no $top, and the
	// usage page size in rows when UsagePaging is set (default 100).
	PageSize int
	// UsagePaging pages JSON usage answers with @odata.nextLink every
	// PageSize rows.
	UsagePaging bool
	// Faults are injected into answers; see Faults.
	Faults Faults
	// Deny answers a resource with an Error body of this status instead:
	// 403, as for a token not allowed to read it, or 404, as an interface
	// without it. Keys are route patterns: "organization", "locations",
	// "projects", "organization/paymentMethods", …
	Deny map[string]int
	// Spike multiplies one project's use of one meter on one UTC day, for
	// the anomaly detector to find; the zero Spike injects nothing.
	Spike Spike
	// OrgName names the simulated organization (default "Example Media
	// Group"); its id follows from Seed.
	OrgName string
	// Currency, when set (USD or EUR), bills every payment method in it;
	// "" gives each method its own (USD and EUR).
	Currency string
	// Revisions are late revisions of earlier days, as a provider sends
	// when it corrects a charge after the month was invoiced: each is a
	// Spike the interface reports only once its clock reaches From, so a
	// month closed before then changes afterwards (an adjustment).
	Revisions []Spike
}

// Spike is an injected jump in cost: every hour of Day, Project's use of
// Meter is Factor times what it would be.
type Spike struct {
	Project string
	Meter   string // the meter name, e.g. streaming_egress_gb
	Day     time.Time
	Factor  int64
	From    time.Time // reported from this time on; zero: always
}

// Server is the simulated management interface, an http.Handler. It is
// safe for concurrent use.
type Server struct {
	opts     Options
	cat      *catalog
	requests atomic.Int64

	mu       sync.Mutex // guards faults, rng and the Retry-After alternation
	faults   Faults
	rng      *rand.Rand
	retryN   int
	bareN    int
	errorRef atomic.Int64
}

// New returns a simulated interface with opts' data, clock and faults.
func New(opts Options) *Server {
	if opts.Token == "" {
		opts.Token = DefaultToken
	}
	if opts.Start.IsZero() {
		opts.Start = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	}
	st := opts.Start.UTC()
	opts.Start = time.Date(st.Year(), st.Month(), st.Day(), 0, 0, 0, 0, time.UTC)
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.PageSize <= 0 {
		opts.PageSize = 100
	}
	s := &Server{opts: opts, cat: newCatalog(opts.Seed, opts.Start, opts.Currency)}
	if opts.OrgName != "" {
		s.cat.orgName = opts.OrgName
	}
	s.cat.addSpike(opts.Spike)
	for _, r := range opts.Revisions {
		s.cat.addSpike(r)
	}
	s.SetFaults(opts.Faults)
	return s
}

// Token returns the bearer token the sim accepts.
func (s *Server) Token() string { return s.opts.Token }

// Requests returns the number of requests served so far, faulty or not.
func (s *Server) Requests() int64 { return s.requests.Load() }

// SetFaults replaces the faults and restarts their generator from f.Seed.
func (s *Server) SetFaults(f Faults) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = f
	s.rng = rand.New(rand.NewPCG(uint64(f.Seed), 0x5eed_fa17))
	s.retryN, s.bareN = 0, 0
}

const apiPrefix = "/api/v1/"

// ServeHTTP answers one request: authentication first, then a fault if one
// is drawn, then the resource.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.requests.Add(1)
	if !s.authorized(w, r) {
		return
	}
	route, params, ok := s.route(r.URL.Path)
	if !ok {
		s.writeError(w, http.StatusNotFound, "NotFound", fmt.Sprintf("no resource at %s", r.URL.Path), nil)
		return
	}
	if !route.allows(r.Method) {
		w.Header().Set("Allow", strings.Join(route.methods, ", "))
		s.writeError(w, http.StatusMethodNotAllowed, "MethodNotAllowed",
			fmt.Sprintf("%s is not allowed on %s; allowed: %s", r.Method, r.URL.Path, strings.Join(route.methods, ", ")), nil)
		return
	}
	if status, ok := s.opts.Deny[strings.Join(route.pattern, "/")]; ok {
		code, detail := "NotFound", fmt.Sprintf("no resource at %s", r.URL.Path)
		if status == http.StatusForbidden {
			code, detail = "Forbidden", fmt.Sprintf("the token may not read %s", r.URL.Path)
		}
		s.writeError(w, status, code, detail, nil)
		return
	}
	if route.pagedGet && r.Method == http.MethodGet && !r.URL.Query().Has("$skiptoken") {
		w.Header().Set("Allow", strings.Join(route.methods, ", "))
		s.writeError(w, http.StatusMethodNotAllowed, "MethodNotAllowed",
			fmt.Sprintf("GET on %s only follows an @odata.nextLink; ask for usage with POST", r.URL.Path), nil)
		return
	}
	f := s.draw()
	if f.delay > 0 {
		t := time.NewTimer(f.delay)
		select {
		case <-t.C:
		case <-r.Context().Done():
			t.Stop()
			return
		}
	}
	if f.status != 0 {
		s.writeFault(w, f)
		return
	}
	route.handle(s, &exchange{w: w, r: r, params: params, cut: f.cut, cutAt: f.cutAt})
}

func (s *Server) authorized(w http.ResponseWriter, r *http.Request) bool {
	h := r.Header.Get("Authorization")
	scheme, tok, found := strings.Cut(h, " ")
	var detail string
	switch {
	case h == "":
		detail = "the request carries no Authorization header; send Authorization: Bearer <token>"
	case !found || !strings.EqualFold(scheme, "Bearer"):
		detail = "the Authorization header is not a bearer token; send Authorization: Bearer <token>"
	case subtle.ConstantTimeCompare([]byte(strings.TrimSpace(tok)), []byte(s.opts.Token)) != 1:
		detail = "the bearer token is not valid"
	default:
		return true
	}
	w.Header().Set("WWW-Authenticate", "Bearer")
	s.writeError(w, http.StatusUnauthorized, "Unauthorized", detail, nil)
	return false
}

// exchange is one request being answered.
type exchange struct {
	w      http.ResponseWriter
	r      *http.Request
	params []string
	cut    bool // answer only part of the body, then drop the connection
	cutAt  int  // for usage: the row the cut falls in
}

type route struct {
	pattern []string // "*" matches one segment
	methods []string
	handle  func(*Server, *exchange)
	// pagedGet allows GET only with a $skiptoken: usage is asked for by
	// POST, and a GET only follows its @odata.nextLink.
	pagedGet bool
}

func (rt *route) allows(method string) bool {
	for _, m := range rt.methods {
		if method == m {
			return true
		}
	}
	return false
}

var routes = []route{
	{[]string{"organization"}, []string{http.MethodGet}, (*Server).handleOrganization, false},
	{[]string{"organization", "paymentMethods"}, []string{http.MethodGet}, (*Server).handlePaymentMethods, false},
	{[]string{"organization", "paymentMethods", "*"}, []string{http.MethodGet}, (*Server).handlePaymentMethod, false},
	{[]string{"organization", "paymentMethods", "*", "rateCard"}, []string{http.MethodGet}, (*Server).handleRateCard, false},
	{[]string{"organization", "reports", "usage"}, []string{http.MethodPost, http.MethodGet}, (*Server).handleUsage, true},
	{[]string{"projects"}, []string{http.MethodGet}, (*Server).handleProjects, false},
	{[]string{"projects", "*", "usage"}, []string{http.MethodGet}, (*Server).handleProjectUsage, false},
	{[]string{"locations"}, []string{http.MethodGet}, (*Server).handleLocations, false},
}

func (s *Server) route(path string) (*route, []string, bool) {
	rest, ok := strings.CutPrefix(path, apiPrefix)
	if !ok {
		return nil, nil, false
	}
	segs := strings.Split(rest, "/")
	for i := range routes {
		rt := &routes[i]
		if len(rt.pattern) != len(segs) {
			continue
		}
		var params []string
		match := true
		for j, p := range rt.pattern {
			switch {
			case p == "*" && segs[j] != "":
				params = append(params, segs[j])
			case p != segs[j]:
				match = false
			}
		}
		if match {
			return rt, params, true
		}
	}
	return nil, nil, false
}

// errorBody is the interface's Error.
type errorBody struct {
	Error  errorDetail `json:"error"`
	Ref    string      `json:"ref"`
	Status int         `json:"status"`
}

type errorDetail struct {
	Code        string         `json:"code"`
	Detail      string         `json:"detail"`
	ExtraDetail map[string]any `json:"extraDetail,omitempty"`
}

// writeError answers with the Error body; every error carries a ref of its
// own, as support would ask for.
func (s *Server) writeError(w http.ResponseWriter, status int, code, detail string, extra map[string]any) {
	n := s.errorRef.Add(1)
	ref := fmt.Sprintf("sim-%06d-%08x", n, mix(s.cat.seed^uint64(n))&0xffffffff)
	body, _ := json.Marshal(errorBody{errorDetail{code, detail, extra}, ref, status})
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", fmt.Sprint(len(body)+1))
	w.WriteHeader(status)
	w.Write(append(body, '\n'))
}

// writeJSON answers 200 with v, or with its first half when the exchange is
// to be cut.
func (s *Server) writeJSON(x *exchange, v any) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		s.writeError(x.w, http.StatusInternalServerError, "InternalError", "encode answer: "+err.Error(), nil)
		return
	}
	x.w.Header().Set("Content-Type", "application/json")
	x.w.Header().Set("Content-Length", fmt.Sprint(buf.Len()))
	if x.cut {
		x.w.Write(buf.Bytes()[:buf.Len()/2])
		abort(x.w)
	}
	x.w.Write(buf.Bytes())
}

// abort sends what was written so far and drops the connection, so the
// client sees a body that ends early.
func abort(w http.ResponseWriter) {
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
	panic(http.ErrAbortHandler)
}

// ParseRevision reads PROJECT:METER:YYYY-MM-DD[:FACTOR]@WHEN, the form of
// `tally sim --revise`: a Spike of an earlier day reported only from WHEN,
// an RFC 3339 time, or a duration (10m) after now.
func ParseRevision(s string, now time.Time) (Spike, error) {
	spec, when, ok := strings.Cut(s, "@")
	if !ok {
		return Spike{}, fmt.Errorf("revision %q is not PROJECT:METER:YYYY-MM-DD[:FACTOR]@WHEN, e.g. newsroom:streaming_egress_gb:2025-03-10:2@10m", s)
	}
	sp, err := ParseSpike(spec)
	if err != nil {
		return Spike{}, err
	}
	if t, err := time.Parse(time.RFC3339, when); err == nil {
		sp.From = t.UTC()
	} else if d, err := time.ParseDuration(when); err == nil && d >= 0 {
		sp.From = now.Add(d).UTC()
	} else {
		return Spike{}, fmt.Errorf("revision %q: when %q is neither an RFC 3339 time (2025-04-02T09:00:00Z) nor a duration from now (10m)", s, when)
	}
	return sp, nil
}

// ParseSpike reads PROJECT:METER:YYYY-MM-DD[:FACTOR] (factor 5 when left
// out), the form of `tally sim --spike`, checking the project and meter
// against the simulated organization's.
func ParseSpike(s string) (Spike, error) {
	parts := strings.Split(s, ":")
	if len(parts) < 3 || len(parts) > 4 {
		return Spike{}, fmt.Errorf("spike %q is not PROJECT:METER:YYYY-MM-DD[:FACTOR], e.g. newsroom:streaming_egress_gb:2025-03-10:5", s)
	}
	sp := Spike{Project: parts[0], Meter: parts[1], Factor: 5}
	day, err := tally.ParseDate(parts[2])
	if err != nil {
		return Spike{}, fmt.Errorf("spike %q: day %q is not a date YYYY-MM-DD", s, parts[2])
	}
	sp.Day = day
	if len(parts) == 4 {
		f, err := strconv.ParseInt(parts[3], 10, 64)
		if err != nil || f < 2 || f > 1000 {
			return Spike{}, fmt.Errorf("spike %q: factor %q is not a whole number from 2 to 1000", s, parts[3])
		}
		sp.Factor = f
	}
	c := newCatalog(0, day)
	var pairs []string
	for _, p := range c.pairs {
		name := c.projects[p.project].name + ":" + meters[p.model.meter].name
		if name == sp.Project+":"+sp.Meter {
			return sp, nil
		}
		pairs = append(pairs, name)
	}
	return Spike{}, fmt.Errorf("spike %q: %s does not use %s; allowed PROJECT:METER pairs: %s", s, sp.Project, sp.Meter, strings.Join(pairs, ", "))
}
