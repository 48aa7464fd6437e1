package configs

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/tally-dev/tally"
)

// Config is a loaded, validated configuration. Paths are resolved; every
// field holds its default when the file left it out.
type Config struct {
	API APIConfig
	// Organizations are the organizations fetched: the api: form's one
	// (Name "") or those organizations: lists. Never empty once loaded,
	// but for a shard that takes none (TakeShard).
	Organizations []Organization
	// Shard, when not zero (tally run --shard), is the shard whose
	// organizations Organizations holds, of the Listed the config lists.
	Shard    Shard
	Listed   int
	Usage    UsageConfig
	Store    StoreConfig
	Reports  ReportsConfig
	Schedule ScheduleConfig
	Export   ExportConfig
	// Lake is where format iceberg writes its tables (lake).
	Lake LakeConfig
	// Budgets are the monthly budgets the alerts step checks (budgets).
	Budgets []Budget
	// Commitments are what was bought under entitlements (commitments):
	// the FOCUS export's Contract Commitment amounts and periods.
	Commitments []Commitment
	// Anomalies are the thresholds of a cost anomaly (anomalies).
	Anomalies AnomalyConfig
	// Alerts are where budget crossings and anomalies are sent (alerts).
	Alerts AlertsConfig
	// Allocation is chargeback: cost centres and the rules that share
	// costs across them (allocation); empty when not configured.
	Allocation tally.Allocation

	// Path is the file the config came from, absolute; "" when parsed from
	// bytes.
	Path string
	// Warnings are problems that do not stop a run but deserve a log line,
	// such as a token file others can read.
	Warnings []string
}

// APIConfig is the management interface's address and how to talk to it.
type APIConfig struct {
	BaseURL   string // https, or http to a loopback host; no trailing slash
	TokenEnv  string // environment variable holding the bearer token; "" when TokenFile is set
	TokenFile string // file holding the token, absolute; "" when TokenEnv is set
	Timeout   time.Duration
	// AnswerTimeout bounds one answer whole, request to last byte
	// (api.answer_timeout); Timeout bounds each wait within it.
	AnswerTimeout time.Duration
	Concurrency   int // windows in flight per organization (the interface's rate limits are per organization)
	// TotalConcurrency bounds the windows in flight over every
	// organization (api.total_concurrency).
	TotalConcurrency int
	MaxRetries       int
	// ConnectRetries bounds the retries of a request that cannot connect
	// (refused, no such host) before the interface has answered once in
	// the run: a wrong address fails in seconds, not after MaxRetries.
	ConnectRetries int
	// TokenWarnBefore is how long before a JWT token's expiry every run
	// warns (api.token_warn_before).
	TokenWarnBefore time.Duration
	// Paths overrides resource paths by tally.DefaultPaths key; only the
	// overrides are here, the client keeps the defaults.
	Paths map[string]string
}

// UsageConfig is what usage to fetch.
type UsageConfig struct {
	Granularity tally.Granularity
	Start       time.Time // first day to backfill, midnight UTC
	Lookback    time.Duration
	// StaleAfter is how old the newest day holding usage may be, counted
	// from today, before the data is called stale (usage.stale_after):
	// per organization with organizations:, for the store with api:.
	StaleAfter       time.Duration
	Window           tally.WindowSize // zero: the largest the granularity allows
	Format           tally.Format
	ReportedDate     bool // filterOnReportedDate
	ProjectNames     []string
	PaymentMethodIDs []string
	MeterNames       []string
	// Source is tally.SourceOrganization (the organization's usage report)
	// or tally.SourceProjects (each of ProjectNames' report, quantities
	// priced from the rate card, basis estimated).
	Source string
}

// StoreConfig is where the data lives.
type StoreConfig struct {
	Path string // DuckDB file
}

// ReportsConfig is where workbooks go and what they flag.
type ReportsConfig struct {
	Dir       string
	Tolerance float64 // rate card variance flagged, as a fraction (0.005 = 0.5 %)
	// Months lists which months `tally run` reports: "previous" and/or
	// "current", relative to the run's UTC date. Empty: none.
	Months []string
	// CloseAfter is how long after a month's end the nightly job's close
	// step closes it (reports.close_after); 0: never.
	CloseAfter time.Duration
	// Deliver is where the deliver step sends workbooks (reports.deliver).
	Deliver DeliverConfig
	// ReportingCurrency, when set, is the currency the Summary and By
	// project add a converted total in, beside the figures per currency;
	// FXRates its rates by month (YYYY-MM) and currency, from
	// reports.fx_rates or the CSV FXRatesPath names (a path, not a secret). A month or currency
	// without a rate has none: never guessed.
	ReportingCurrency string
	FXRates           map[string]map[string]FXRate
	FXRatesPath       string
}

// DeliverConfig is reports.deliver: a shared folder and/or a mail server
// the deliver step sends each finished month's workbook to, once.
type DeliverConfig struct {
	Dir  string      // "" for none
	SMTP *SMTPConfig // nil for none
}

// SMTPConfig is reports.deliver.smtp. The password comes from
// PasswordEnv or PasswordFile, never from the YAML.
type SMTPConfig struct {
	Host         string
	Port         int
	Security     string // starttls or tls (implicit)
	Username     string
	PasswordEnv  string
	PasswordFile string
	From         string
	To           []string
	Subject      string // {month} is replaced by YYYY-MM
	// Timeout bounds one whole send: connect, greeting, every command and
	// the message. A server that never answers costs at most this.
	Timeout time.Duration
}

// DefaultSMTPTimeout is reports.deliver.smtp.timeout's default: a whole
// send of a workbook takes seconds, and a dead server costs a run its tries
// of this (the deliver step stops at the first delivery that fails them all).
const DefaultSMTPTimeout = 60 * time.Second

// ScheduleConfig is what `tally schedule` runs and when.
type ScheduleConfig struct {
	Jobs     []Job
	LockWait time.Duration // how long a run waits for another run's lock
	Grace    time.Duration // how long a cancelled run may take to stop cleanly
}

// Job is one scheduled job.
type Job struct {
	Name string
	Cron string   // cron spec, optionally prefixed CRON_TZ=<zone>
	Run  []string // steps in order: fetch, report, export
}

// ExportConfig is where `tally export` and the export step write, and
// what.
type ExportConfig struct {
	Dir      string // the export folder, absolute
	Format   string // ExportParquet, ExportFOCUS or ExportIceberg
	FOCUSCSV bool   // with format focus, also write every FOCUS dataset as CSV
	// CSVRaw writes the CSV's text as it is, without the quote that
	// keeps a spreadsheet from running a value as a formula: for
	// programs that read the files, never for people's spreadsheets.
	CSVRaw bool
}

// LakeConfig is lake: the Iceberg catalog the iceberg export commits to,
// the warehouse folder its files go under and the namespace of its
// tables. The catalog is an embedded SQLite file (the default) or a
// PostgreSQL database several machines share.
type LakeConfig struct {
	Namespace string // lake.namespace; DefaultLakeNamespace
	// SQLite is the SQLite catalog's file (lake.catalog sqlite:PATH),
	// absolute; "" for the default, catalog.db in the lake folder of the
	// export folder (LakeDir), unless Postgres is set.
	SQLite string
	// Postgres is lake.catalog's postgres:// URL, without a password;
	// the password comes from PasswordEnv or PasswordFile
	// (lake.password_env, lake.password_file), or from ~/.pgpass.
	Postgres     string
	PasswordEnv  string
	PasswordFile string
	// Warehouse is lake.warehouse: a folder, absolute, or an S3 URL
	// s3://BUCKET[/PREFIX] without a trailing slash; "" for the default,
	// the warehouse folder in the lake folder of the export folder.
	Warehouse string
	// S3 is lake.s3, how to reach an S3 warehouse; zero for a folder.
	S3 LakeS3
	// KeepSnapshots is how long tally lake maintain keeps a snapshot that
	// is no longer current (lake.keep_snapshots); OrphanAge how old a
	// file that no snapshot holds must be before it deletes it
	// (lake.orphan_age), never under MinOrphanAge.
	KeepSnapshots time.Duration
	OrphanAge     time.Duration
}

// LakeS3 is lake.s3: the S3 service an s3:// warehouse is on and where
// its keys come from (never the YAML). Without keys, the AWS SDK's own
// chain is used (AWS_ACCESS_KEY_ID, ~/.aws, an instance's or pod's role).
type LakeS3 struct {
	// Endpoint is the service's address, https (http only to a loopback
	// host), no trailing slash; "" for AWS's own for the region.
	Endpoint string
	Region   string // DefaultS3Region when left out
	// PathStyle addresses the bucket in the path (HOST/BUCKET/KEY), as
	// most self-hosted servers need, rather than in the host name
	// (BUCKET.HOST/KEY).
	PathStyle                   bool
	AccessKeyEnv, AccessKeyFile string
	SecretKeyEnv, SecretKeyFile string
}

// DefaultS3Region is lake.s3.region's default.
const DefaultS3Region = "us-east-1"

// S3Scheme starts lake.warehouse's S3 form.
const S3Scheme = "s3://"

// OnS3 says whether the warehouse is on S3.
func (l *LakeConfig) OnS3() bool { return strings.HasPrefix(l.Warehouse, S3Scheme) }

// Defaults and bound of lake maintenance (lake.keep_snapshots,
// lake.orphan_age).
const (
	DefaultKeepSnapshots = 7 * 24 * time.Hour
	DefaultOrphanAge     = 3 * 24 * time.Hour
	MinOrphanAge         = 24 * time.Hour
)

// LakeDir is the folder under an export folder that holds the lake: the
// default catalog (catalog.db) and the warehouse (warehouse/).
const LakeDir = "lake"

// CatalogSQLite starts lake.catalog's embedded form.
const CatalogSQLite = "sqlite:"

// DefaultLakeNamespace is lake.namespace's default.
const DefaultLakeNamespace = "tally"

// Budget is one entry of budgets: a monthly amount for a scope in one
// currency, and the percentages of it that alert on actual and on
// forecast cost.
type Budget struct {
	Name string
	// ScopeKind is all, project, payment_method, family, organization or
	// cost_centre; Scope names the project (in every organization), payment
	// method id, family, organization or cost centre ("" for all), as the
	// forecasts view keys them.
	ScopeKind, Scope string
	Currency         string
	Amount           tally.Decimal
	Actual           []int // percent thresholds on the month's actual cost
	Forecast         []int // percent thresholds on its month-end forecast
}

// ScopeText is the budget's scope as written: all or kind:name.
func (b Budget) ScopeText() string {
	if b.ScopeKind == "all" {
		return "all"
	}
	return b.ScopeKind + ":" + b.Scope
}

// AnomalyConfig is anomalies: a day's cost is anomalous when it exceeds
// the median of the 28 days before by more than MADs scaled median
// absolute deviations, by at least MinAmount and by at least MinPercent of
// the median.
type AnomalyConfig struct {
	MADs       tally.Decimal
	MinAmount  tally.Decimal
	MinPercent tally.Decimal
}

// AlertsConfig is alerts: the sinks beside the log, which always gets
// every alert.
type AlertsConfig struct {
	Webhook *WebhookConfig // nil for none
}

// WebhookConfig is alerts.webhook. The signing secret comes from
// SecretEnv or SecretFile, never from the YAML; with neither, bodies are
// sent unsigned.
type WebhookConfig struct {
	URL        string
	SecretEnv  string
	SecretFile string
	Timeout    time.Duration
}

// Export formats.
const (
	ExportParquet = "parquet" // usage and the reference tables, Hive-partitioned by month
	ExportFOCUS   = "focus"   // usage as FinOps FOCUS (1.3, or 1.2 on request)
	// ExportIceberg commits the usage table to an Apache Iceberg table in
	// the lake (lake.catalog): only the partitions that changed.
	ExportIceberg = "iceberg"
)

// Defaults that INTERFACE.md documents.
const (
	DefaultBaseURL          = "https://app.mk.io"
	DefaultTokenEnv         = "TALLY_API_TOKEN"
	DefaultTimeout          = 60 * time.Second
	DefaultAnswerTimeout    = 30 * time.Minute
	DefaultConcurrency      = 4
	DefaultTotalConcurrency = 16 // api.total_concurrency: windows in flight over every organization
	DefaultMaxRetries       = 8
	DefaultConnectRetries   = 3
	DefaultTokenWarnBefore  = 14 * 24 * time.Hour
	DefaultGranularity      = tally.Day
	DefaultLookback         = 7 * 24 * time.Hour
	DefaultStaleAfter       = 2 * 24 * time.Hour
	// MinStaleAfter and MaxStaleAfter bound usage.stale_after: a day
	// holds usage only once it is over, and past a quarter a warning of
	// stale data is no warning at all.
	MinStaleAfter         = 24 * time.Hour
	MaxStaleAfter         = 90 * 24 * time.Hour
	DefaultFormat         = tally.FormatJSON
	DefaultStorePath      = "data/tally.duckdb"
	DefaultReportsDir     = "reports"
	DefaultTolerance      = 0.005
	DefaultLockWait       = 10 * time.Minute
	DefaultGrace          = 30 * time.Second
	DefaultExportDir      = "exports"
	DefaultAnomalyMADs    = "4"
	DefaultAnomalyMin     = "1"
	DefaultAnomalyPercent = "50"
	DefaultWebhookTimeout = 10 * time.Second
)

// Environment variables that override the file.
const (
	EnvBaseURL = "TALLY_BASE_URL" // api.base_url
	EnvDB      = "TALLY_DB"       // store.path
)

// DefaultMonths are the months `tally run` reports when reports.months is
// left out: last month (now final) and the current one (so far).
var DefaultMonths = []string{"previous", "current"}

// DefaultJobs is the schedule when schedule.jobs is left out.
func DefaultJobs() []Job {
	return []Job{{Name: "nightly", Cron: "CRON_TZ=UTC 30 2 * * *", Run: []string{"fetch", "report"}}}
}

// Error is an invalid or unreadable configuration: every problem found, one
// a line, each naming the field, the value and what is allowed.
type Error struct {
	Path     string // the file; "" when parsed from bytes
	Problems []string
}

func (e *Error) Error() string {
	head := "invalid config"
	if e.Path != "" {
		head += " " + e.Path
	}
	return head + ":\n  " + strings.Join(e.Problems, "\n  ")
}

// maxConfigSize bounds what Load reads: a config is a page of YAML.
const maxConfigSize = 1 << 20

// Load reads, decodes, defaults, overrides from the environment (through
// getenv, so tests need no real environment) and validates the config at
// path. Relative paths in the file are resolved against the file's folder.
// Every error is a *Error.
func Load(path string, getenv func(string) string) (*Config, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, &Error{Path: path, Problems: []string{fmt.Sprintf("resolve path: %v", err)}}
	}
	f, err := os.Open(abs)
	if err != nil {
		return nil, &Error{Path: abs, Problems: []string{fmt.Sprintf("read config: %v; pass --config with the path of a config file (see configs/tally.example.yaml)", err)}}
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxConfigSize+1))
	if err != nil {
		return nil, &Error{Path: abs, Problems: []string{fmt.Sprintf("read config: %v", err)}}
	}
	cfg, err := Parse(data, filepath.Dir(abs), getenv)
	if err != nil {
		if ce, ok := err.(*Error); ok {
			ce.Path = abs
		}
		return nil, err
	}
	cfg.Path = abs
	cfg.RegisterSecrets(getenv)
	return cfg, nil
}

// Parse is Load for config text: dir is the folder relative paths are
// resolved against.
func Parse(data []byte, dir string, getenv func(string) string) (*Config, error) {
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	p := &parser{dir: dir, getenv: getenv, dropped: map[string]bool{}, blank: map[string]bool{}}
	cfg := p.parse(data)
	if len(p.problems) > 0 {
		return nil, &Error{Problems: p.problems}
	}
	return cfg, nil
}

// DefaultBasis is the basis a workbook or export of this config uses
// unless told otherwise: estimated for usage.source projects, else the
// basis the usage query filters on.
func (c *Config) DefaultBasis() tally.Basis {
	if c.Usage.Source == tally.SourceProjects {
		return tally.BasisEstimated
	}
	return c.UsageQueryBase().Basis()
}

// UsageQueryBase returns the usage query the config asks for, without a
// window: format, basis and filters.
func (c *Config) UsageQueryBase() tally.UsageQuery {
	return tally.UsageQuery{
		Format:           c.Usage.Format,
		ReportedDate:     c.Usage.ReportedDate,
		ProjectNames:     append([]string(nil), c.Usage.ProjectNames...),
		PaymentMethodIDs: append([]string(nil), c.Usage.PaymentMethodIDs...),
		MeterNames:       append([]string(nil), c.Usage.MeterNames...),
	}
}

// CheckDeliverDir says why dir cannot take delivered workbooks: it does
// not exist, is not a folder, or this process may not write into it. The
// config load and tally status ask, so a missing share is found before a
// month's delivery fails on it.
func CheckDeliverDir(dir string) error {
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return errors.New("does not exist")
	case err != nil:
		return fmt.Errorf("cannot be read: %v", errors.Unwrap(err))
	case !fi.IsDir():
		return errors.New("is not a folder")
	}
	if err := syscall.Access(dir, 2 /* W_OK */); err != nil {
		return fmt.Errorf("is not writable by this user (%v)", err)
	}
	return nil
}
