package tally

import (
	"fmt"
	"net"
	"net/url"
	"regexp"
	"slices"
	"strings"
)

// DefaultPaths are the resource paths Tally reads, relative to the base URL.
// The seed leaves them "not shown"; API-NOTES.md gives the platform's
// published ones. {id} and {project_name} are filled in path-escaped.
// WithPaths overrides any of them (config api.paths).
var DefaultPaths = map[string]string{
	"usage":           "/api/v1/organization/reports/usage",                // POST
	"payment_methods": "/api/v1/organization/paymentMethods",               // GET, list envelope, paged
	"payment_method":  "/api/v1/organization/paymentMethods/{id}",          // GET
	"rate_card":       "/api/v1/organization/paymentMethods/{id}/rateCard", // GET
	"projects":        "/api/v1/projects",                                  // GET, list envelope, paged
	"locations":       "/api/v1/locations",                                 // GET, {"kind","value"}
	"organization":    "/api/v1/organization",                              // GET
	"project_usage":   "/api/v1/projects/{project_name}/usage",             // GET
}

var placeholderRE = regexp.MustCompile(`\{[^{}]*\}`)

// pathKeys lists the keys of DefaultPaths, sorted, for error messages.
func pathKeys() []string {
	keys := make([]string, 0, len(DefaultPaths))
	for k := range DefaultPaths {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// CheckPathKey reports a key that is not one of DefaultPaths'.
func CheckPathKey(key string) error {
	if _, ok := DefaultPaths[key]; !ok {
		return fmt.Errorf("api path %q is not known; allowed keys: %s", key, strings.Join(pathKeys(), ", "))
	}
	return nil
}

// CheckPath is the one rule for an override of DefaultPaths[key] (WithPaths
// and the config's api.paths): a path on the base address, never a URL
// (the token is only ever sent to the base URL's origin), carrying exactly
// the placeholders the default carries, or requests for different ids
// would silently go to one place.
func CheckPath(key, tmpl string) error {
	def, ok := DefaultPaths[key]
	if !ok {
		return CheckPathKey(key)
	}
	if !strings.HasPrefix(tmpl, "/") || strings.HasPrefix(tmpl, "//") || strings.ContainsAny(tmpl, "?# \t\r\n") {
		return fmt.Errorf("%q must be a path on the base address starting with a single /, without query or spaces, e.g. %q", tmpl, def)
	}
	want := placeholderRE.FindAllString(def, -1)
	got := placeholderRE.FindAllString(tmpl, -1)
	slices.Sort(want)
	slices.Sort(got)
	if !slices.Equal(want, got) {
		allowed := "no placeholders"
		if len(want) > 0 {
			allowed = "the placeholders " + strings.Join(want, ", ")
		}
		return fmt.Errorf("%q must carry %s, like %q", tmpl, allowed, def)
	}
	if strings.ContainsAny(placeholderRE.ReplaceAllString(tmpl, ""), "{}") {
		return fmt.Errorf("%q holds a brace outside a placeholder; placeholders are %s", tmpl, strings.Join(want, ", "))
	}
	return nil
}

// ExpandPath fills a path template; every value is path-escaped so an id
// cannot reach another resource ("../" or "?").
func ExpandPath(tmpl string, vars map[string]string) string {
	return placeholderRE.ReplaceAllStringFunc(tmpl, func(p string) string {
		return url.PathEscape(vars[p[1:len(p)-1]])
	})
}

// baseURLAllowed says what a base URL may be, in every error about one.
const baseURLAllowed = "an https:// address such as https://app.mk.io (http:// only for a loopback host such as http://127.0.0.1:8080)"

// CheckBaseURL is the one rule for the interface's address (NewClient and
// the config's api.base_url): the token goes there, so it is https, or
// plain http only to this machine (the simulator, tests); no user or
// password (the token is the only credential), no query or fragment. A
// user and password written into it never appear in the error.
func CheckBaseURL(raw string) (*url.URL, error) {
	raw = strings.TrimSpace(raw)
	shown := redactUserinfo(raw)
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return nil, fmt.Errorf("%q is not a URL: use %s", shown, baseURLAllowed)
	case u.User != nil:
		return nil, fmt.Errorf("%q must not carry a user or password (left out here): the token is the only credential, from api.token_env or api.token_file", shown)
	case u.Host == "" || u.Hostname() == "" || u.Opaque != "":
		return nil, fmt.Errorf("%q is not %s: it has no host", shown, baseURLAllowed)
	case u.Scheme != "https" && u.Scheme != "http":
		return nil, fmt.Errorf("%q is not %s: its scheme is %q", shown, baseURLAllowed, u.Scheme)
	case u.Scheme == "http" && !IsLoopback(u.Hostname()):
		return nil, fmt.Errorf("%q uses http to a host that is not loopback (127.0.0.0/8, ::1, localhost), so the token would cross the network in clear: use %s", shown, baseURLAllowed)
	case u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || strings.Contains(raw, "#"):
		return nil, fmt.Errorf("%q must not have a query or fragment: use %s", shown, baseURLAllowed)
	}
	return u, nil
}

// redactUserinfo hides a user and password written into an address, so an
// error never repeats a secret, even in an address url.Parse refuses.
func redactUserinfo(s string) string {
	scheme, rest, ok := strings.Cut(s, "://")
	if !ok {
		return s
	}
	authority, path := rest, ""
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		authority, path = rest[:i], rest[i:]
	}
	at := strings.LastIndex(authority, "@")
	if at < 0 {
		return s
	}
	return scheme + "://…@" + authority[at+1:] + path
}

// IsLoopback says whether host names this machine (127.0.0.0/8, ::1,
// localhost): the one place plain http is allowed, since nothing crosses
// the network.
func IsLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// CheckSinkURL is the rule for an address Tally posts alerts to
// (alerts.webhook.url): https, or plain http only to this machine, with a
// host and no user or password. Unlike the base URL it may carry a query,
// as Teams workflow addresses do. Such an address often holds its own
// secret, so the error shows only its scheme and host; SinkName is that
// same safe name, for logs.
func CheckSinkURL(raw string) (*url.URL, error) {
	u, err := url.Parse(strings.TrimSpace(raw))
	switch {
	case err != nil || u.Opaque != "":
		return nil, fmt.Errorf("is not a URL; use an https:// address such as https://hooks.slack.com/services/…")
	case u.User != nil:
		return nil, fmt.Errorf("%s must not carry a user or password", SinkName(u))
	case u.Hostname() == "":
		return nil, fmt.Errorf("has no host; use an https:// address such as https://hooks.slack.com/services/…")
	case u.Scheme != "https" && u.Scheme != "http":
		return nil, fmt.Errorf("has scheme %q; use https:// (http:// only for a loopback host)", u.Scheme)
	case u.Scheme == "http" && !IsLoopback(u.Hostname()):
		return nil, fmt.Errorf("%s uses http to a host that is not loopback, so alerts would cross the network in clear; use https://", SinkName(u))
	}
	return u, nil
}

// SinkName is an alert address without its path or query, which may hold
// a secret: scheme://host.
func SinkName(u *url.URL) string { return u.Scheme + "://" + u.Host }
