package configs

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strings"

	"github.com/tally-dev/tally"
	"github.com/tally-dev/tally/internal/secret"
)

// maxTokenSize bounds what is read from a token file: a bearer token is a
// line, not a file's worth.
const maxTokenSize = 64 << 10

// Token returns the API bearer token from api.token_env (through getenv) or
// api.token_file, trimmed of surrounding whitespace, as a value that never
// formats itself: only the Authorization header reveals it. Errors say
// where the token was looked for and what to do; they never contain the
// token. A token file others can read is reported in Config.Warnings by
// Load.
func (c *Config) Token(getenv func(string) string) (secret.Value, error) {
	return readToken("api", "the api token", c.API.TokenEnv, c.API.TokenFile, getenv)
}

// OrgToken returns organization o's token, as Token does for the api:
// form; errors name o's keys.
func (c *Config) OrgToken(o Organization, getenv func(string) string) (secret.Value, error) {
	if o.Field == "" || o.Field == "api" {
		return c.Token(getenv)
	}
	return readToken(o.Field, fmt.Sprintf("organization %s's token", o.Name), o.TokenEnv, o.TokenFile, getenv)
}

func readToken(field, what, tokenEnv, tokenFile string, getenv func(string) string) (secret.Value, error) {
	tok, from, err := tokenText(field, what, tokenEnv, tokenFile, getenv)
	if err != nil {
		return secret.Value{}, err
	}
	// A token with a line break or control character would corrupt the
	// Authorization header; say so without showing it.
	for _, r := range tok {
		if r < 0x21 || r == 0x7f {
			return secret.Value{}, fmt.Errorf("read %s: the token in %s contains spaces, line breaks or control characters; it must be a single word", what, from)
		}
	}
	return secret.New(tok), nil
}

// tokenText reads the token's text from its file, else its environment
// variable, and says where it looked (from) for the caller's messages.
func tokenText(field, what, tokenEnv, tokenFile string, getenv func(string) string) (tok, from string, err error) {
	if tokenFile != "" {
		from = field + ".token_file " + tokenFile
		f, err := os.Open(tokenFile)
		if err != nil {
			// The key first, then the path: the path alone does not say
			// which line of the config to fix.
			var pe *fs.PathError
			if errors.As(err, &pe) {
				err = pe.Err
			}
			return "", from, fmt.Errorf("read %s: %s: %w; put the token in that file (mode 600) or set %s.token_env instead", what, from, err, field)
		}
		defer f.Close()
		b, err := io.ReadAll(io.LimitReader(f, maxTokenSize+1))
		if err != nil {
			return "", from, fmt.Errorf("read %s: %s: %w; %s.token_file must name a readable file holding the token alone", what, from, err, field)
		}
		if len(b) > maxTokenSize {
			return "", from, fmt.Errorf("read %s: %s is larger than %d bytes; it must hold the token alone", what, from, maxTokenSize)
		}
		tok = strings.TrimSpace(string(b))
		if tok == "" {
			return "", from, fmt.Errorf("read %s: %s is empty; put the token in it", what, from)
		}
	} else {
		name := tokenEnv
		if name == "" {
			name = DefaultTokenEnv
		}
		from = "environment variable " + name
		if getenv != nil {
			tok = strings.TrimSpace(getenv(name))
		}
		if tok == "" {
			return "", from, fmt.Errorf("read %s: %s is not set or empty; export the token in it, or point %s.token_file at a file holding it", what, from, field)
		}
	}
	return tok, from, nil
}

// Secret returns the webhook's signing secret from secret_env (through
// getenv) or secret_file, trimmed, empty when neither is set (bodies are
// then sent unsigned). A key that is set but leads to no secret is an
// error naming the key, never the secret.
func (w *WebhookConfig) Secret(getenv func(string) string) (secret.Value, error) {
	return readSecret("alerts.webhook.secret_env", "alerts.webhook.secret_file", "the webhook's signing secret", w.SecretEnv, w.SecretFile, getenv)
}

// Password returns the SMTP password from password_env (through getenv) or
// password_file, empty when neither is set, as a value that never formats
// itself: only the mail server's AUTH reveals it. Errors name the key, never the
// password.
func (s *SMTPConfig) Password(getenv func(string) string) (secret.Value, error) {
	return readSecret("reports.deliver.smtp.password_env", "reports.deliver.smtp.password_file", "the mail password", s.PasswordEnv, s.PasswordFile, getenv)
}

// Password returns the PostgreSQL catalog's password from password_env
// (through getenv) or password_file, empty when neither is set (pgx then
// looks in ~/.pgpass). Errors name the key, never the password.
func (l *LakeConfig) Password(getenv func(string) string) (secret.Value, error) {
	return readSecret("lake.password_env", "lake.password_file", "the catalog database's password", l.PasswordEnv, l.PasswordFile, getenv)
}

// readSecret reads what (a secret other than the API token) from the file
// file names, else the environment variable env names, trimmed; empty when
// neither is set. Errors name the key (envKey or fileKey) and what to do.
func readSecret(envKey, fileKey, what, env, file string, getenv func(string) string) (secret.Value, error) {
	switch {
	case file != "":
		b, err := os.ReadFile(file)
		if err != nil {
			return secret.Value{}, fmt.Errorf("%s: %w; put %s in that file (mode 600)", fileKey, err, what)
		}
		v := strings.TrimSpace(string(b))
		if v == "" {
			return secret.Value{}, fmt.Errorf("%s: %s is empty; put %s in it", fileKey, file, what)
		}
		return secret.New(v), nil
	case env != "":
		v := ""
		if getenv != nil {
			v = strings.TrimSpace(getenv(env))
		}
		if v == "" {
			return secret.Value{}, fmt.Errorf("%s: the environment variable %s is not set or empty; export %s in it, or point %s at a file holding it", envKey, env, what, fileKey)
		}
		return secret.New(v), nil
	}
	return secret.Value{}, nil
}

// CheckSecrets reads every secret that steps (the names of
// schedule.jobs[].run) need, before any of them runs: the webhook's signing
// secret for fetch (which ends with the alerts check) and alerts, the mail
// password for deliver, the lake's password and S3 keys for an export to
// the lake. It returns a *Error naming each key that leads to
// no secret, never a secret. The API token is read by the command, which
// knows whether it sends anything to the interface.
func (c *Config) CheckSecrets(getenv func(string) string, steps []string) error {
	var problems []string
	if w := c.Alerts.Webhook; w != nil && (slices.Contains(steps, "fetch") || slices.Contains(steps, "alerts")) {
		if _, err := w.Secret(getenv); err != nil {
			problems = append(problems, err.Error())
		}
	}
	if s := c.Reports.Deliver.SMTP; s != nil && slices.Contains(steps, "deliver") {
		if _, err := s.Password(getenv); err != nil {
			problems = append(problems, err.Error())
		}
	}
	if c.Export.Format == ExportIceberg && slices.Contains(steps, "export") || c.Usage.Source == tally.SourceLake && slices.Contains(steps, "fetch") {
		if _, err := c.Lake.Password(getenv); err != nil {
			problems = append(problems, err.Error())
		}
		if _, _, err := c.Lake.S3Keys(getenv); err != nil {
			problems = append(problems, err.Error())
		}
	}
	if len(problems) > 0 {
		return &Error{Path: c.Path, Problems: problems}
	}
	return nil
}

// RegisterSecrets gives every secret the config names (the API token, the
// SMTP password, the webhook's signing secret and the path and query of its
// address, the lake's catalog password and S3 keys) to the redaction step every log line, printed error and stored
// message passes through (internal/secret), so a peer that echoes one back
// cannot get it written anywhere. A secret that cannot be read is skipped:
// the step that needs it reports that. Load calls it; a secret added to
// the config later is read here too.
func (c *Config) RegisterSecrets(getenv func(string) string) {
	// Reading a token registers it; one that cannot be read is the
	// fetch's to report.
	for _, o := range c.Orgs() {
		_, _ = c.OrgToken(o, getenv)
	}
	if s := c.Reports.Deliver.SMTP; s != nil {
		_, _ = s.Password(getenv)
	}
	if w := c.Alerts.Webhook; w != nil {
		secret.RegisterURL(w.URL)
		_, _ = w.Secret(getenv)
	}
	_, _ = c.Lake.Password(getenv)
	_, _, _ = c.Lake.S3Keys(getenv)
}
