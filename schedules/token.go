package schedules

import (
	"fmt"
	"time"

	"github.com/rs/zerolog"

	"github.com/tally-dev/tally/configs"
	"github.com/tally-dev/tally/fetch"
)

// TokenExpiredError is an API token past its expiry (a JWT's exp claim):
// every request would be refused, so nothing is sent. It is bad
// configuration (exit 2), with what to do.
type TokenExpiredError struct {
	Expired time.Time
	Config  *configs.Config
}

func (e *TokenExpiredError) Error() string {
	where := "the environment variable " + e.Config.API.TokenEnv
	if e.Config.API.TokenFile != "" {
		where = "the file " + e.Config.API.TokenFile
	}
	return fmt.Sprintf("the API token expired on %s (its exp claim): nothing was sent; create a new personal API token in the web application (it is shown once) and put it in %s (api.token_env / api.token_file)",
		e.Expired.Format(time.RFC3339), where)
}

// CheckToken returns a *TokenExpiredError when token is a JWT past its
// expiry at now, and logs a warning when it expires within
// api.token_warn_before. The token itself and its other claims are never
// logged. An opaque token is neither.
func CheckToken(cfg *configs.Config, token string, now time.Time, log zerolog.Logger) error {
	exp, ok := fetch.TokenExpiry(token)
	if !ok {
		return nil
	}
	left := exp.Sub(now)
	if left <= 0 {
		return &TokenExpiredError{Expired: exp, Config: cfg}
	}
	if left <= cfg.API.TokenWarnBefore {
		log.Warn().Time("token_expires", exp).Str("left", fmt.Sprintf("%.1f days", left.Hours()/24)).
			Msg("the API token expires soon: create a new personal API token in the web application before then, or the nightly job stops")
	}
	return nil
}
