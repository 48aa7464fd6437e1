package fetch

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"time"
)

// TokenExpiry reads the expiry of a JWT-shaped token (three base64url
// parts, the middle a JSON object) from its exp claim, without verifying
// it: Tally only warns before the interface would refuse it. Nothing else
// of the token or its claims is kept. An opaque token, or a JWT without a
// numeric exp, reports false.
func TokenExpiry(token string) (time.Time, bool) {
	parts := strings.Split(strings.TrimSpace(token), ".")
	if len(parts) != 3 || parts[0] == "" || parts[1] == "" {
		return time.Time{}, false
	}
	payload, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(parts[1], "="))
	if err != nil {
		return time.Time{}, false
	}
	var claims struct {
		Exp *json.Number `json:"exp"`
	}
	if err := json.Unmarshal(payload, &claims); err != nil || claims.Exp == nil {
		return time.Time{}, false
	}
	f, err := claims.Exp.Float64()
	if err != nil || f <= 0 {
		return time.Time{}, false
	}
	return time.Unix(int64(f), 0).UTC(), true
}
