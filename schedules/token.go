package schedules

import (
	"fmt"
	"time"

	"github.com/rs/zerolog"

	"github.com/tally-dev/tally/configs"
	"github.com/tally-dev/tally/fetch"
	"github.com/tally-dev/tally/internal/secret"
	"github.com/tally-dev/tally/job"
)

// TokenExpiredError is an API token past its expiry (a JWT's exp claim):
// every request would be refused, so nothing is sent. It is bad
// configuration (exit 2), with what to do.
type TokenExpiredError struct {
	Expired time.Time
	Config  *configs.Config
	// Org is the organization whose token it is, for an organizations:
	// config; zero for the api: form.
	Org configs.Organization
}

func (e *TokenExpiredError) Error() string {
	whose := "the API token"
	if e.Org.Name != "" {
		whose = "organization " + e.Org.Name + "'s API token"
	}
	where, field := TokenSource(e.Config, e.Org)
	return fmt.Sprintf("%s expired on %s (its exp claim): nothing was sent; create a new personal API token in the web application (it is shown once) and put it in %s (%s.token_env / %s.token_file)",
		whose, e.Expired.Format(time.RFC3339), where, field, field)
}

// Is makes it a refusal: nothing was sent (exit 2).
func (e *TokenExpiredError) Is(target error) bool { return target == job.ErrRefused }

// TokenSource says where organization o's token (o zero: the api: form's)
// is read from, "the environment variable X" or "the file F", and the key
// of the config that names it (api or organizations[i]).
func TokenSource(cfg *configs.Config, o configs.Organization) (where, field string) {
	env, file, field := cfg.API.TokenEnv, cfg.API.TokenFile, "api"
	if o.Name != "" {
		env, file, field = o.TokenEnv, o.TokenFile, o.Field
	}
	if file != "" {
		return "the file " + file, field
	}
	return "the environment variable " + env, field
}

// CheckToken returns a *TokenExpiredError when token is a JWT past its
// expiry at now, and logs a warning when it expires within
// api.token_warn_before. The token itself and its other claims are never
// logged. An opaque token is neither.
func CheckToken(cfg *configs.Config, token secret.Value, now time.Time, log zerolog.Logger) error {
	return CheckOrgToken(cfg, configs.Organization{}, token, now, log)
}

// CheckOrgToken is CheckToken for organization o's token (o zero: the api:
// form's).
func CheckOrgToken(cfg *configs.Config, o configs.Organization, token secret.Value, now time.Time, log zerolog.Logger) error {
	exp, ok := fetch.TokenExpiry(token.Reveal())
	if !ok {
		return nil
	}
	left := exp.Sub(now)
	if left <= 0 {
		return &TokenExpiredError{Expired: exp, Config: cfg, Org: o}
	}
	if o.Name != "" {
		log = log.With().Str("organization", o.Name).Logger()
	}
	if left <= cfg.API.TokenWarnBefore {
		log.Warn().Time("token_expires", exp).Str("left", fmt.Sprintf("%.1f days", left.Hours()/24)).
			Msg("the API token expires soon: create a new personal API token in the web application before then, or the nightly job stops")
	}
	return nil
}
