package sim

import (
	"crypto/subtle"
	"fmt"
	"net/http"
	"slices"
	"strings"
)

// Group serves several simulated organizations behind one address, as the
// platform does: the paths name no organization (/organization/…), so the
// bearer token alone says whose data a request reads (seed §5: the token
// carries the organization's identity). A token of no organization is
// answered 401; a request that names a resource of another organization
// (a payment method id, a project) is answered 403, never with the other
// organization's data.
type Group struct {
	orgs []*Server
}

// NewGroup groups servers, each with its own token and seed.
func NewGroup(servers ...*Server) (*Group, error) {
	seen := map[string]string{}
	for _, s := range servers {
		if other, ok := seen[s.opts.Token]; ok {
			return nil, fmt.Errorf("organizations %q and %q share a token: each organization needs its own", other, s.cat.orgName)
		}
		seen[s.opts.Token] = s.cat.orgName
	}
	return &Group{orgs: servers}, nil
}

// Orgs returns the grouped organizations' servers, for their truth.
func (g *Group) Orgs() []*Server { return slices.Clone(g.orgs) }

// OrgID is the organization id the server's data carries.
func (s *Server) OrgID() string { return s.cat.orgID }

// OrgName is the organization's name.
func (s *Server) OrgName() string { return s.cat.orgName }

// ServeHTTP hands the request to the token's organization, or refuses it.
func (g *Group) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_, tok, _ := strings.Cut(r.Header.Get("Authorization"), " ")
	tok = strings.TrimSpace(tok)
	var own *Server
	for _, s := range g.orgs {
		if subtle.ConstantTimeCompare([]byte(tok), []byte(s.opts.Token)) == 1 {
			own = s
		}
	}
	if own == nil {
		// The first organization answers: it refuses a token it does not
		// know with the interface's own 401.
		g.orgs[0].ServeHTTP(w, r)
		return
	}
	if other := g.owner(own, r.URL.Path); other != nil {
		own.requests.Add(1)
		own.writeError(w, http.StatusForbidden, "Forbidden",
			fmt.Sprintf("%s belongs to another organization; this token's organization is %s (%s)", r.URL.Path, own.cat.orgName, own.cat.orgID), nil)
		return
	}
	own.ServeHTTP(w, r)
}

// owner returns the other organization whose resource path names (a
// payment method or a project the token's own organization does not
// have), or nil.
func (g *Group) owner(own *Server, path string) *Server {
	rest, ok := strings.CutPrefix(path, apiPrefix)
	if !ok {
		return nil
	}
	seg := strings.Split(strings.Trim(rest, "/"), "/")
	has := func(s *Server) bool {
		switch {
		case len(seg) >= 3 && seg[0] == "organization" && seg[1] == "paymentMethods":
			_, ok := s.cat.pmByID[seg[2]]
			return ok
		case len(seg) >= 2 && seg[0] == "projects":
			_, ok := s.cat.projByName[seg[1]]
			return ok
		}
		return false
	}
	if has(own) {
		return nil
	}
	for _, s := range g.orgs {
		if s != own && has(s) {
			return s
		}
	}
	return nil
}
