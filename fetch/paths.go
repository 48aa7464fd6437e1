package fetch

import (
	"fmt"
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

// checkPathKey reports a key that is not one of DefaultPaths'.
func checkPathKey(key string) error {
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
		return checkPathKey(key)
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

// expandPath fills a path template; every value is path-escaped so an id
// cannot reach another resource ("../" or "?").
func expandPath(tmpl string, vars map[string]string) string {
	return placeholderRE.ReplaceAllStringFunc(tmpl, func(p string) string {
		return url.PathEscape(vars[p[1:len(p)-1]])
	})
}
