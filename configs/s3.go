package configs

import (
	"net/url"
	"regexp"
	"strings"

	"github.com/tally-dev/tally"
	"github.com/tally-dev/tally/internal/secret"
)

// rawS3 is lake.s3: how to reach a warehouse on S3.
type rawS3 struct {
	Endpoint      at[string] `yaml:"endpoint"`
	Region        at[string] `yaml:"region"`
	PathStyle     at[bool]   `yaml:"path_style"`
	AccessKeyEnv  at[string] `yaml:"access_key_env"`
	AccessKeyFile at[string] `yaml:"access_key_file"`
	SecretKeyEnv  at[string] `yaml:"secret_key_env"`
	SecretKeyFile at[string] `yaml:"secret_key_file"`
}

var (
	// bucketRE is S3's rule for a bucket name (lower case, so that it
	// works in a host name too, as virtual-hosted addressing puts it).
	bucketRE = regexp.MustCompile(`^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$`)
	// prefixRE is a prefix's folder names: what a file URI carries
	// unchanged, so that the paths the table records are the keys.
	prefixRE = regexp.MustCompile(`^[A-Za-z0-9_.-]+(/[A-Za-z0-9_.-]+)*$`)
	regionRE = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,62}$`)
)

const s3WarehouseAllowed = "s3://BUCKET[/PREFIX], e.g. s3://finance-lake/tally (a bucket of lower-case letters, digits, . and -; a prefix of folder names of letters, digits, _, . and -)"

// s3Warehouse checks lake.warehouse's s3:// form and returns it without
// a trailing slash; "" when it is refused.
func (p *parser) s3Warehouse(k key, w string) string {
	rest := strings.TrimRight(strings.TrimPrefix(w, S3Scheme), "/")
	bucket, prefix, _ := strings.Cut(rest, "/")
	switch {
	case strings.ContainsAny(rest, "@?#%"):
		// Not the value: a user or a query in it may hold a key.
		p.bad(k, "holds @, ?, # or %%: give %s; the keys come from lake.s3.access_key_env|file and secret_key_env|file", s3WarehouseAllowed)
	case !bucketRE.MatchString(bucket) || strings.Contains(bucket, ".."):
		p.bad(k, "%q names no bucket S3 allows: give %s", w, s3WarehouseAllowed)
	case prefix != "" && (!prefixRE.MatchString(prefix) || hasDotFolder(prefix)):
		p.bad(k, "%q has a prefix S3 keys would not hold as written: give %s, without empty, . or .. folders", w, s3WarehouseAllowed)
	default:
		return S3Scheme + rest
	}
	return ""
}

func hasDotFolder(prefix string) bool {
	for _, f := range strings.Split(prefix, "/") {
		if f == "." || f == ".." {
			return true
		}
	}
	return false
}

// s3 reads lake.s3, which only a warehouse on S3 (written as one, s3)
// takes: its endpoint, region, addressing and where its keys come from.
func (p *parser) s3(r *rawS3, c *LakeConfig, s3 bool) {
	given := []key{r.Endpoint.key, r.Region.key, r.PathStyle.key, r.AccessKeyEnv.key, r.AccessKeyFile.key, r.SecretKeyEnv.key, r.SecretKeyFile.key}
	if !s3 {
		for _, k := range given {
			if k.given() {
				p.bad(k, "is set but lake.warehouse is not s3://BUCKET[/PREFIX]: lake.s3 says how to reach a warehouse on S3; leave it out for a folder")
			}
		}
		return
	}
	s := &c.S3
	s.Endpoint = p.s3Endpoint(r.Endpoint)
	s.Region = p.text(r.Region, DefaultS3Region)
	if !regionRE.MatchString(s.Region) {
		p.bad(r.Region.key, "%q is not a region: lower-case letters, digits and -, e.g. eu-central-1 (default %s)", s.Region, DefaultS3Region)
	}
	s.PathStyle = p.boolean(r.PathStyle)
	s.AccessKeyEnv, s.AccessKeyFile = p.s3Key(r.AccessKeyEnv, r.AccessKeyFile)
	s.SecretKeyEnv, s.SecretKeyFile = p.s3Key(r.SecretKeyEnv, r.SecretKeyFile)
	hasAccess, hasSecret := s.AccessKeyEnv != "" || s.AccessKeyFile != "", s.SecretKeyEnv != "" || s.SecretKeyFile != ""
	switch {
	case hasAccess && !hasSecret:
		p.bad(r.SecretKeyEnv.key, "missing: lake.s3.access_key_env or access_key_file is set, so give the secret key too, in secret_key_env or secret_key_file")
	case hasSecret && !hasAccess:
		p.bad(r.AccessKeyEnv.key, "missing: lake.s3.secret_key_env or secret_key_file is set, so give the access key id too, in access_key_env or access_key_file")
	}
}

// s3Key reads where one of the keys comes from: a variable or a file,
// not both.
func (p *parser) s3Key(env, file at[string]) (string, string) {
	e := p.text(env, "")
	if e != "" && !envNameRE.MatchString(e) {
		p.bad(env.key, "%q is not an environment variable name (letters, digits and _, not starting with a digit)", e)
	}
	f := p.text(file, "")
	if f != "" {
		f = p.path(f)
	}
	if e != "" && f != "" {
		p.addf(file.n, env.path+" and "+strings.TrimPrefix(file.path, "lake.s3."), "set one, not both")
	}
	return e, f
}

const s3EndpointAllowed = "an https:// address such as https://s3.eu-central-1.amazonaws.com or https://minio.internal:9000 (http:// only for a loopback host such as http://127.0.0.1:7070)"

// s3Endpoint checks lake.s3.endpoint as api.base_url is checked: https,
// or http only to this machine, a host and nothing but a host and port.
func (p *parser) s3Endpoint(a at[string]) string {
	s := strings.TrimSpace(p.text(a, ""))
	if s == "" {
		p.notEmpty(a, "leave the key out for AWS's endpoint of lake.s3.region, or give "+s3EndpointAllowed)
		return ""
	}
	u, err := url.Parse(s)
	switch {
	case err != nil || u.Opaque != "":
		p.bad(a.key, "is not a URL: use %s", s3EndpointAllowed)
	case u.User != nil:
		// Not the value: the user part may be a key.
		pw, _ := u.User.Password()
		secret.Register(u.User.Username(), pw)
		p.bad(a.key, "holds a user or password: the keys come from lake.s3.access_key_env|file and secret_key_env|file, never the YAML")
	case u.Hostname() == "":
		p.bad(a.key, "%q has no host: use %s", s, s3EndpointAllowed)
	case u.Scheme != "https" && u.Scheme != "http":
		p.bad(a.key, "%q has scheme %q: use %s", s, u.Scheme, s3EndpointAllowed)
	case u.Scheme == "http" && !tally.IsLoopback(u.Hostname()):
		p.bad(a.key, "%q uses http to a host that is not loopback (127.0.0.0/8, ::1, localhost), so the lake's data would cross the network in clear: use %s", s, s3EndpointAllowed)
	case strings.Trim(u.Path, "/") != "" || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || strings.Contains(s, "#"):
		p.bad(a.key, "%q has a path, query or fragment: give the service's address alone, %s; the bucket and prefix go in lake.warehouse", s, s3EndpointAllowed)
	default:
		return strings.TrimRight(s, "/")
	}
	return ""
}

// S3Keys returns the S3 access key id and secret key from lake.s3's
// variables or files, both empty when neither is set (the AWS SDK's
// chain is then used). Errors name the key, never a key's value.
func (l *LakeConfig) S3Keys(getenv func(string) string) (access, secretKey secret.Value, err error) {
	access, err = readSecret("lake.s3.access_key_env", "lake.s3.access_key_file", "the S3 access key id", l.S3.AccessKeyEnv, l.S3.AccessKeyFile, getenv)
	if err != nil {
		return secret.Value{}, secret.Value{}, err
	}
	secretKey, err = readSecret("lake.s3.secret_key_env", "lake.s3.secret_key_file", "the S3 secret access key", l.S3.SecretKeyEnv, l.S3.SecretKeyFile, getenv)
	if err != nil {
		return secret.Value{}, secret.Value{}, err
	}
	return access, secretKey, nil
}

// CheckSecrets reads every secret the lake needs (the catalog's password,
// the S3 keys): the commands that reach the lake check them before they
// write anything.
func (l *LakeConfig) CheckSecrets(getenv func(string) string) error {
	if _, err := l.Password(getenv); err != nil {
		return err
	}
	if _, _, err := l.S3Keys(getenv); err != nil {
		return err
	}
	return nil
}
