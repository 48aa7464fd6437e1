package configs

import (
	"errors"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/tally-dev/tally/internal/secret"
)

type rawSchedule struct {
	Jobs     *[]rawJob         `yaml:"jobs"` // nil: left out, so the default job
	LockWait at[time.Duration] `yaml:"lock_wait"`
	Grace    at[time.Duration] `yaml:"grace"`
}

type rawJob struct {
	Name at[string] `yaml:"name"`
	Cron at[string] `yaml:"cron"`
	Run  list       `yaml:"run"`
}

var jobSteps = []string{"fetch", "report", "close", "deliver", "alerts", "export"}

func (p *parser) schedule(r *rawSchedule, c *ScheduleConfig) {
	c.LockWait = p.duration(r.LockWait, DefaultLockWait, false, 24*time.Hour, "10m")
	c.Grace = p.duration(r.Grace, DefaultGrace, false, time.Hour, "30s")
	if r.Jobs == nil {
		c.Jobs = DefaultJobs()
		return
	}
	c.Jobs = []Job{}
	names := map[string]bool{}
	for _, i := range listed(p, r.Jobs, "schedule.jobs", true) {
		rj := &(*r.Jobs)[i]
		j := Job{
			Name: p.text(rj.Name, ""),
			Cron: strings.TrimSpace(p.text(rj.Cron, "")),
		}
		switch {
		case j.Name == "":
			p.bad(rj.Name.key, "missing; give the job a name, e.g. nightly")
		case names[j.Name]:
			p.bad(rj.Name.key, "%q is the name of another job; names must be unique", j.Name)
		}
		names[j.Name] = true
		if j.Cron == "" {
			p.bad(rj.Cron.key, `missing; give a cron spec, e.g. "CRON_TZ=UTC 30 2 * * *"`)
		} else if _, err := ParseCron(j.Cron); err != nil {
			p.bad(rj.Cron.key, "job %q: %v", j.Name, err)
		}
		j.Run = p.list(rj.Run, func(s string) string {
			if !slices.Contains(jobSteps, s) {
				return "is not one of " + strings.Join(jobSteps, ", ")
			}
			return ""
		})
		if run := rj.Run; !run.given() || (run.n.Kind == yaml.SequenceNode && len(run.Items) == 0) {
			p.bad(run.key, "missing; list the steps, e.g. [fetch, report]")
		}
		c.Jobs = append(c.Jobs, j)
	}
}

type rawExport struct {
	Dir      at[string] `yaml:"dir"`
	Format   at[string] `yaml:"format"`
	FOCUSCSV at[bool]   `yaml:"focus_csv"`
	CSVRaw   at[bool]   `yaml:"csv_raw"`
}

type rawLake struct {
	Namespace     at[string] `yaml:"namespace"`
	Catalog       at[string] `yaml:"catalog"`
	Warehouse     at[string] `yaml:"warehouse"`
	PasswordEnv   at[string] `yaml:"password_env"`
	PasswordFile  at[string] `yaml:"password_file"`
	S3            rawS3      `yaml:"s3"`
	KeepSnapshots at[span]   `yaml:"keep_snapshots"`
	OrphanAge     at[span]   `yaml:"orphan_age"`
}

// lakeNameRE is a namespace every engine reads without quoting.
var lakeNameRE = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,63}$`)

func (p *parser) lake(r *rawLake, c *LakeConfig) {
	c.Namespace = p.text(r.Namespace, DefaultLakeNamespace)
	if !lakeNameRE.MatchString(c.Namespace) {
		p.bad(r.Namespace.key, "%q is not a namespace: lower-case letters, digits and _, at most 64, not starting with a digit", c.Namespace)
		c.Namespace = DefaultLakeNamespace
	}
	c.KeepSnapshots = DefaultKeepSnapshots
	if k := r.KeepSnapshots; p.has(k.key) {
		switch d := time.Duration(k.V); {
		case !k.ok:
			p.bad(k.key, "%q is not <n>d or <n>h, e.g. 7d", k.S)
		case d < time.Hour:
			p.bad(k.key, "%q is under an hour: a reader that planned its scan on a snapshot a moment ago would lose its files", k.S)
		default:
			c.KeepSnapshots = d
		}
	}
	c.OrphanAge = DefaultOrphanAge
	if o := r.OrphanAge; p.has(o.key) {
		switch d := time.Duration(o.V); {
		case !o.ok:
			p.bad(o.key, "%q is not <n>d or <n>h, e.g. 3d", o.S)
		case d < MinOrphanAge:
			p.bad(o.key, "%q is under a day: a file an export is writing now, not yet committed, would be taken for an orphan", o.S)
		default:
			c.OrphanAge = d
		}
	}
	w := p.text(r.Warehouse, "")
	if w != "" {
		switch u, err := url.Parse(w); {
		case strings.HasPrefix(w, S3Scheme):
			c.Warehouse = p.s3Warehouse(r.Warehouse.key, w)
		case err == nil && u.Scheme != "" && len(u.Scheme) > 1:
			// One letter is a Windows drive.
			p.bad(r.Warehouse.key, "%q is neither a folder nor s3://BUCKET[/PREFIX]: this version keeps the warehouse in a local or mounted folder or on S3", w)
		default:
			c.Warehouse = p.path(w)
		}
	}
	p.s3(&r.S3, c, strings.HasPrefix(w, S3Scheme))
	c.PasswordEnv = p.text(r.PasswordEnv, "")
	if c.PasswordEnv != "" && !envNameRE.MatchString(c.PasswordEnv) {
		p.bad(r.PasswordEnv.key, "%q is not an environment variable name", c.PasswordEnv)
	}
	if f := p.text(r.PasswordFile, ""); f != "" {
		c.PasswordFile = p.path(f)
	}
	if c.PasswordEnv != "" && c.PasswordFile != "" {
		p.addf(r.PasswordFile.n, "lake.password_env and password_file", "set one, not both")
	}
	cat := p.text(r.Catalog, "")
	if cat == "" {
		if c.PasswordEnv != "" || c.PasswordFile != "" {
			p.bad(r.Catalog.key, "is not set but lake.password_env or password_file is: the password is for a postgres:// catalog")
		}
		return
	}
	if strings.HasPrefix(cat, "postgres://") || strings.HasPrefix(cat, "postgresql://") {
		p.postgresCatalog(r, c, cat)
		return
	}
	path, ok := strings.CutPrefix(cat, CatalogSQLite)
	switch {
	case !ok:
		p.bad(r.Catalog.key, "%q is not a catalog this version accepts: sqlite:PATH (an embedded SQLite file) or postgres://USER@HOST[:PORT]/DATABASE (a shared PostgreSQL database); no REST catalog yet", cat)
	case strings.TrimSpace(path) == "":
		p.bad(r.Catalog.key, "sqlite: needs the catalog file's path, e.g. sqlite:/var/lib/tally/lake/catalog.db")
	default:
		c.SQLite = p.path(path)
		if c.PasswordEnv != "" || c.PasswordFile != "" {
			p.bad(r.Catalog.key, "is a SQLite file but lake.password_env or password_file is set: a password is for a postgres:// catalog")
		}
	}
}

// postgresCatalog checks lake.catalog's postgres:// form: a URL with a
// host and a database and no password (that comes from password_env or
// password_file, or ~/.pgpass when neither is set).
func (p *parser) postgresCatalog(r *rawLake, c *LakeConfig, cat string) {
	u, err := url.Parse(cat)
	switch {
	case err != nil:
		// Not the value: a URL that fails to parse may hold a password.
		p.bad(r.Catalog.key, "is not a URL postgres://USER@HOST[:PORT]/DATABASE: %v", errors.Unwrap(err))
		return
	case u.User != nil && func() bool { _, ok := u.User.Password(); return ok }():
		secret.Register(func() string { pw, _ := u.User.Password(); return pw }())
		p.bad(r.Catalog.key, "%q holds a password: the password is never in the YAML; set lake.password_env or lake.password_file", u.Redacted())
		return
	case u.Host == "":
		p.bad(r.Catalog.key, "%q names no host: postgres://USER@HOST[:PORT]/DATABASE", cat)
		return
	case strings.Trim(u.Path, "/") == "":
		p.bad(r.Catalog.key, "%q names no database: postgres://USER@HOST[:PORT]/DATABASE", cat)
		return
	}
	c.Postgres = cat
}

func (p *parser) export(r *rawExport, c *ExportConfig) {
	c.Dir = p.path(p.text(r.Dir, DefaultExportDir))
	c.Format = oneOf(p, r.Format, ExportParquet, ExportParquet, ExportFOCUS, ExportIceberg)
	c.FOCUSCSV = p.boolean(r.FOCUSCSV)
	c.CSVRaw = p.boolean(r.CSVRaw)
}
