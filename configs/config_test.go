package configs

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tally-dev/tally"
)

func noEnv(string) string { return "" }

func env(kv ...string) func(string) string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) string { return m[k] }
}

const minimal = "usage:\n  start: 2026-01-01\n"

func mustParse(t *testing.T, yml string, getenv func(string) string) *Config {
	t.Helper()
	cfg, err := Parse([]byte(yml), "/etc/tally", getenv)
	if err != nil {
		t.Fatalf("Parse:\n%s\nerror: %v", yml, err)
	}
	return cfg
}

func TestDefaults(t *testing.T) {
	cfg := mustParse(t, minimal, noEnv)
	want := &Config{
		API: APIConfig{
			BaseURL: "https://app.mk.io", TokenEnv: "TALLY_API_TOKEN", Timeout: 60 * time.Second, AnswerTimeout: 30 * time.Minute,
			Concurrency: 4, TotalConcurrency: 16, MaxRetries: 8, ConnectRetries: 3, TokenWarnBefore: 14 * 24 * time.Hour, Paths: map[string]string{},
		},
		Organizations: []Organization{{BaseURL: "https://app.mk.io", TokenEnv: "TALLY_API_TOKEN", Paths: map[string]string{}, Field: "api"}},
		Usage: UsageConfig{
			Granularity: tally.Day, Start: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
			Lookback: 7 * 24 * time.Hour, StaleAfter: 2 * 24 * time.Hour, Format: tally.FormatJSON, Source: tally.SourceOrganization,
		},
		Store:   StoreConfig{Path: "/etc/tally/data/tally.duckdb"},
		Reports: ReportsConfig{Dir: "/etc/tally/reports", Tolerance: 0.005, Months: []string{"previous", "current"}},
		Schedule: ScheduleConfig{
			Jobs:     []Job{{Name: "nightly", Cron: "CRON_TZ=UTC 30 2 * * *", Run: []string{"fetch", "report"}}},
			LockWait: 10 * time.Minute, Grace: 30 * time.Second,
		},
		Export:    ExportConfig{Dir: "/etc/tally/exports", Format: "parquet"},
		Lake:      LakeConfig{Namespace: DefaultLakeNamespace, KeepSnapshots: DefaultKeepSnapshots, OrphanAge: DefaultOrphanAge},
		Anomalies: AnomalyConfig{MADs: tally.MustDecimal("4"), MinAmount: tally.MustDecimal("1"), MinPercent: tally.MustDecimal("50")},
	}
	if !reflect.DeepEqual(cfg, want) {
		t.Errorf("defaults:\n got %+v\nwant %+v", cfg, want)
	}
}

func TestParseAllFields(t *testing.T) {
	yml := `
api:
  base_url: http://127.0.0.1:8080/prefix/
  token_file: secrets/token
  timeout: 90s
  concurrency: 32
  max_retries: 0
  paths:
    usage: /v2/usage
    rate_card: /v2/pm/{id}/card
usage:
  granularity: hour
  start: "2024-02-29"
  lookback: 36h
  window: 1m
  format: csv
  reported_date: true
  payment_method_ids: [0B6F2A4E-5C1D-4E8F-9A3B-7C2D1E0F4A5B]
  meter_names: [a, b]
store:
  path: /var/lib/tally/t.duckdb
reports:
  dir: ../out
  tolerance: 0
  months: [current]
  close_after: 36h
schedule:
  lock_wait: 0s
  grace: 1h
  jobs:
    - name: hourly
      cron: "@hourly"
      run: [fetch]
    - name: monthly
      cron: "CRON_TZ=Europe/Berlin 0 6 2 * *"
      run: [report, export]
`
	cfg := mustParse(t, yml, noEnv)
	want := &Config{
		API: APIConfig{
			BaseURL: "http://127.0.0.1:8080/prefix", TokenFile: "/etc/tally/secrets/token", Timeout: 90 * time.Second, AnswerTimeout: 30 * time.Minute,
			Concurrency: 32, TotalConcurrency: 32, MaxRetries: 0, ConnectRetries: 3, TokenWarnBefore: 14 * 24 * time.Hour, Paths: map[string]string{"usage": "/v2/usage", "rate_card": "/v2/pm/{id}/card"},
		},
		Organizations: []Organization{{
			BaseURL: "http://127.0.0.1:8080/prefix", TokenFile: "/etc/tally/secrets/token", Paths: map[string]string{"usage": "/v2/usage", "rate_card": "/v2/pm/{id}/card"},
			PaymentMethodIDs: []string{"0B6F2A4E-5C1D-4E8F-9A3B-7C2D1E0F4A5B"}, MeterNames: []string{"a", "b"}, Field: "api",
		}},
		Usage: UsageConfig{
			Granularity: tally.Hour, Start: time.Date(2024, 2, 29, 0, 0, 0, 0, time.UTC), Lookback: 36 * time.Hour, StaleAfter: 2 * 24 * time.Hour,
			Window: tally.WindowSize{N: 1, Unit: 'm'}, Format: tally.FormatCSV, ReportedDate: true,
			PaymentMethodIDs: []string{"0B6F2A4E-5C1D-4E8F-9A3B-7C2D1E0F4A5B"}, MeterNames: []string{"a", "b"}, Source: tally.SourceOrganization,
		},
		Store:   StoreConfig{Path: "/var/lib/tally/t.duckdb"},
		Reports: ReportsConfig{Dir: "/etc/out", Tolerance: 0, Months: []string{"current"}, CloseAfter: 36 * time.Hour},
		Schedule: ScheduleConfig{
			Jobs: []Job{
				{Name: "hourly", Cron: "@hourly", Run: []string{"fetch"}},
				{Name: "monthly", Cron: "CRON_TZ=Europe/Berlin 0 6 2 * *", Run: []string{"report", "export"}},
			},
			LockWait: 0, Grace: time.Hour,
		},
		Export:    ExportConfig{Dir: "/etc/tally/exports", Format: "parquet"},
		Lake:      LakeConfig{Namespace: DefaultLakeNamespace, KeepSnapshots: DefaultKeepSnapshots, OrphanAge: DefaultOrphanAge},
		Anomalies: AnomalyConfig{MADs: tally.MustDecimal("4"), MinAmount: tally.MustDecimal("1"), MinPercent: tally.MustDecimal("50")},
	}
	if !reflect.DeepEqual(cfg, want) {
		t.Errorf("parsed:\n got %+v\nwant %+v", cfg, want)
	}
}

func TestParseEmptyListsAndLoopbacks(t *testing.T) {
	cfg := mustParse(t, minimal+"reports:\n  months: []\nschedule:\n  jobs: []\n", noEnv)
	if len(cfg.Reports.Months) != 0 || len(cfg.Schedule.Jobs) != 0 {
		t.Errorf("explicit empty lists should mean none, got months %v jobs %v", cfg.Reports.Months, cfg.Schedule.Jobs)
	}
	for _, u := range []string{"http://localhost:9000", "http://LOCALHOST", "http://127.0.0.1", "http://127.8.9.10:1", "http://[::1]:8080", "https://example.com:8443/base"} {
		cfg := mustParse(t, minimal+"api:\n  base_url: "+u+"\n", noEnv)
		if cfg.API.BaseURL != u {
			t.Errorf("base_url %q became %q", u, cfg.API.BaseURL)
		}
	}
	for _, y := range []string{"", "# nothing\n", "usage:\n", "~\n"} {
		_, err := Parse([]byte(y), "", noEnv)
		var ce *Error
		if !errors.As(err, &ce) || len(ce.Problems) != 1 || !strings.HasPrefix(ce.Problems[0], "usage.start: missing") {
			t.Errorf("config %q: error %v, want only usage.start missing", y, err)
		}
	}
}

// One case per rule: the value and a fragment of the message it gets.
func TestValidation(t *testing.T) {
	uuid := "0b6f2a4e-5c1d-4e8f-9a3b-7c2d1e0f4a5b"
	tests := []struct {
		name, yml string
		want      []string // one fragment a problem
	}{
		{"unknown section", minimal + "apii:\n  x: 1\n", []string{"apii: unknown key; known keys in the top level: api, organizations, usage, store, reports, schedule, export, lake, budgets, commitments, anomalies, alerts, allocation; did you mean api? (line 3)"}},
		{"unknown key", "api:\n  tokn_env: X\n" + minimal, []string{"api.tokn_env: unknown key; known keys in api: base_url, token_env, token_file, timeout, answer_timeout, concurrency, total_concurrency, max_retries, connect_retries, token_warn_before, paths; did you mean token_env? (line 2)"}},
		{"unknown job key", minimal + "schedule:\n  jobs:\n    - name: a\n      cron: \"@daily\"\n      run: [fetch]\n      when: now\n", []string{"schedule.jobs[0].when: unknown key; known keys in schedule.jobs[0]: name, cron, run (line 8)"}},
		{"key twice", minimal + "api:\n  timeout: 1s\n  timeout: 2s\n", []string{"api.timeout: given twice (first on line 4) (line 5)"}},
		{"section not a mapping", minimal + "api: 5\n", []string{`api: must be a mapping with keys base_url, token_env, token_file, timeout, answer_timeout, concurrency, total_concurrency, max_retries, connect_retries, token_warn_before, paths, not "5" (line 3)`}},
		{"section an alias of a scalar", "usage:\n  start: &s 2026-01-01\napi: *s\n", []string{`api: must be a mapping with keys base_url, token_env, token_file, timeout, answer_timeout, concurrency, total_concurrency, max_retries, connect_retries, token_warn_before, paths, not "2026-01-01" (line 2)`}},
		{"top level not a mapping", "- a\n- b\n", []string{"config: must be a mapping with keys api, organizations, usage, store, reports, schedule, export, lake, budgets, commitments, anomalies, alerts, allocation, not a list (line 1)", "usage.start: missing"}},
		{"merge key", minimal + "x: &x\n  timeout: 1s\n", []string{"x: unknown key"}},
		{"budget problems", minimal + "budgets:\n  - name: a\n    scope: team:x\n    currency: usd\n    amount: -5\n    actual: [80, 0]\n  - name: a\n    currency: EUR\n    amount: 10\n", []string{
			`budgets[0].scope: "team:x" is not all, project:NAME, payment_method:ID, family:NAME, organization:NAME or cost_centre:NAME`,
			`budgets[0].currency: "usd" is not a currency code of three capital letters`,
			`budgets[0].amount: "-5" is not an amount above 0`,
			`budgets[0].actual[1]: "0" is not a percentage from 1 to 1000`,
			`budgets[1].name: "a" is the name of another budget`}},
		{"anomaly thresholds", minimal + "anomalies:\n  mads: 0\n  min_amount: x\n", []string{
			"anomalies.mads: is 0", `anomalies.min_amount: "x" is not an amount from 0 to 1000000000000000 (10^15) with at most 6 decimals, e.g. 10`}},
		{"anomaly thresholds too large", minimal + "anomalies:\n  mads: 101\n  min_amount: 1e400\n  min_percent: 10001\n", []string{
			`anomalies.mads: "101" is not a number of MADs above 0 and at most 100 with at most 6 decimals, e.g. 4 (line 4)`,
			`anomalies.min_amount: "1e400" is not an amount from 0 to 1000000000000000 (10^15) with at most 6 decimals, e.g. 10 (line 5)`,
			`anomalies.min_percent: "10001" is not a percentage from 0 to 10000 with at most 6 decimals, e.g. 50 (line 6)`}},
		{"anomaly thresholds too fine", minimal + "anomalies:\n  min_amount: 0.0000001\n", []string{
			`anomalies.min_amount: "0.0000001" is not an amount from 0 to 1000000000000000 (10^15) with at most 6 decimals`}},
		{"budget amount huge", minimal + "budgets:\n  - {name: a, currency: USD, amount: 1e400}\n", []string{
			`budgets[0].amount: "1e400" is not an amount above 0 and at most 1000000000000000 (10^15) with at most 2 decimal places (alerts state it in cents), e.g. 5000 or 1250.50 (line 4)`}},
		{"budget amount above the bound", minimal + "budgets:\n  - {name: a, currency: USD, amount: 1000000000000000.01}\n", []string{
			`budgets[0].amount: "1000000000000000.01" is not an amount above 0 and at most 1000000000000000 (10^15)`}},
		{"budget amount finer than cents", minimal + "budgets:\n  - {name: a, currency: USD, amount: 0.0000000000001}\n", []string{
			`budgets[0].amount: "0.0000000000001" is not an amount above 0 and at most 1000000000000000 (10^15) with at most 2 decimal places`}},
		{"budget amount zero", minimal + "budgets:\n  - {name: a, currency: USD, amount: 0.00}\n", []string{
			`budgets[0].amount: "0.00" is not an amount above 0`}},
		{"base_url empty", minimal + "api:\n  base_url: \"\"\n", []string{
			`api.base_url: "" is empty; leave the key out for the vendor's https://app.mk.io, or give the interface's https:// address (line 4)`}},
		{"base_url blank", minimal + "api:\n  base_url: ' '\n", []string{
			`api.base_url: " " is empty; leave the key out`}},
		{"webhook in clear", minimal + "alerts:\n  webhook:\n    url: http://hooks.example.com/services/T000/SECRETPATH\n    secret_env: A\n    secret_file: b\n", []string{
			"alerts.webhook.url: http://hooks.example.com uses http to a host that is not loopback",
			"alerts.webhook.secret_env and secret_file: set one, not both"}},
		{"webhook without url", minimal + "alerts:\n  webhook:\n    secret_env: A\n", []string{"alerts.webhook.url: missing"}},
		{"projects source", minimal + "  source: projects\n  granularity: hour\n  meter_names: [x]\n", []string{
			"usage.project_names: missing; usage.source projects reads each listed project's usage report",
			`usage.granularity: "hour" with usage.source projects`,
			"usage.source: projects takes no payment_method_ids, meter_names or reported_date"}},
		{"unknown source", minimal + "  source: project\n", []string{`usage.source: "project" is not one of organization, projects`}},
		{"merge key used", "base: &b {timeout: 1s}\n" + minimal, []string{"base: unknown key"}},
		{"merge key in section", minimal + "api:\n  <<: {timeout: 1s}\n", []string{"api.<<: merge keys are not supported"}},
		{"not YAML", "usage: [\n", []string{"config: not valid YAML"}},
		{"two documents", minimal + "---\nusage:\n  start: 2026-01-02\n", []string{"config: holds more than one YAML document"}},

		{"granularity", "usage:\n  start: 2026-01-01\n  granularity: hourly\n", []string{`usage.granularity: "hourly" is not one of hour, day, week, month, year (line 3)`}},
		{"start missing", "usage:\n  granularity: day\n", []string{"usage.start: missing; set the first day to backfill as YYYY-MM-DD"}},
		{"start empty", "usage:\n  start: ''\n", []string{"usage.start: missing"}},
		{"start not a date", "usage:\n  start: 2026-13-01\n", []string{`usage.start: "2026-13-01" is not a YYYY-MM-DD date`}},
		{"start a time", "usage:\n  start: 2026-01-01T10:00:00Z\n", []string{`usage.start: "2026-01-01T10:00:00Z" is not a YYYY-MM-DD date`}},
		{"start a list", "usage:\n  start: [2026-01-01]\n", []string{"usage.start: must be a single value, not a list"}},
		{"lookback no unit", minimal + "  lookback: 7\n", []string{`usage.lookback: "7" is not <n>d or <n>h with n ≥ 0, e.g. 7d, 36h, 0d`}},
		{"lookback negative", minimal + "  lookback: -1d\n", []string{`usage.lookback: "-1d" is not <n>d or <n>h`}},
		{"lookback weeks", minimal + "  lookback: 1w\n", []string{`usage.lookback: "1w" is not <n>d or <n>h`}},
		{"lookback huge", minimal + "  lookback: 99999d\n", []string{`usage.lookback: "99999d" is longer than ten years`}},
		{"stale_after no unit", minimal + "  stale_after: 2\n", []string{`usage.stale_after: "2" is not <n>d or <n>h, e.g. 2d, 36h`}},
		{"stale_after too short", minimal + "  stale_after: 12h\n", []string{`usage.stale_after: "12h" is outside 1d to 90d`}},
		{"stale_after zero", minimal + "  stale_after: 0d\n", []string{`usage.stale_after: "0d" is outside 1d to 90d`}},
		{"stale_after too long", minimal + "  stale_after: 91d\n", []string{`usage.stale_after: "91d" is outside 1d to 90d`}},
		{"window syntax", minimal + "  window: 7x\n", []string{`usage.window: "7x" is not a window size: <n>d, <n>w, <n>m or <n>y`}},
		{"window too large for hour", minimal + "  granularity: hour\n  window: 5w\n", []string{`usage.window: "5w" is not allowed for granularity hour: a hour window is at most 31 days`}},
		{"window too large for day", minimal + "  window: 366d\n", []string{`usage.window: "366d" is not allowed for granularity day: a day window is at most one year (e.g. 365d, 52w, 12m, 1y)`}},
		{"window in days for weeks", minimal + "  granularity: week\n  window: 14d\n", []string{`usage.window: "14d" is not allowed for granularity week: a week window is sized in weeks (e.g. 4w)`}},
		{"format", minimal + "  format: xml\n", []string{`usage.format: "xml" is not one of json, csv`}},
		{"reported_date", minimal + "  reported_date: yes\n", []string{`usage.reported_date: "yes" is not true or false`}},
		{"filters exclusive", minimal + "  project_names: [p]\n  payment_method_ids: [" + uuid + "]\n", []string{"usage.project_names and usage.payment_method_ids: set one, not both"}},
		{"payment method id", minimal + "  payment_method_ids: [" + uuid + ", abc]\n", []string{`usage.payment_method_ids[1]: "abc" is not a UUID`}},
		{"project names a string", minimal + "  project_names: p\n", []string{`usage.project_names: must be a list, not "p"`}},
		{"meter twice", minimal + "  meter_names: [a, a]\n", []string{`usage.meter_names[1]: "a" is listed twice`}},
		{"meter empty", minimal + "  meter_names: ['', ~]\n", []string{`usage.meter_names[0]: "" must not be empty`, "usage.meter_names[1]: must not be empty"}},

		{"base_url http", minimal + "api:\n  base_url: http://app.mk.io\n", []string{`api.base_url: "http://app.mk.io" uses http to a host that is not loopback`}},
		{"base_url http private address", minimal + "api:\n  base_url: http://10.0.0.1\n", []string{`api.base_url: "http://10.0.0.1" uses http`}},
		{"base_url scheme", minimal + "api:\n  base_url: ftp://app.mk.io\n", []string{`api.base_url: "ftp://app.mk.io" is not an https:// address`}},
		{"base_url no host", minimal + "api:\n  base_url: https:///x\n", []string{`api.base_url: "https:///x" is not an https://`}},
		{"base_url relative", minimal + "api:\n  base_url: app.mk.io\n", []string{`api.base_url: "app.mk.io" is not an https://`}},
		{"base_url unparsable", minimal + "api:\n  base_url: 'https://a b:x'\n", []string{`api.base_url: "https://a b:x" is not a URL`}},
		{"base_url userinfo", minimal + "api:\n  base_url: https://me:hunter2@app.mk.io\n", []string{`api.base_url: "https://…@app.mk.io" must not carry a user or password`}},
		{"base_url query", minimal + "api:\n  base_url: https://app.mk.io/?a=1\n", []string{`api.base_url: "https://app.mk.io/?a=1" must not have a query or fragment`}},
		{"base_url fragment", minimal + "api:\n  base_url: 'https://app.mk.io#x'\n", []string{"must not have a query or fragment"}},
		{"token_env name", minimal + "api:\n  token_env: 1TOKEN\n", []string{`api.token_env: "1TOKEN" is not an environment variable name`}},
		{"token env and file", minimal + "api:\n  token_env: T\n  token_file: /t\n", []string{"api.token_env and api.token_file: set one, not both"}},
		{"timeout zero", minimal + "api:\n  timeout: 0s\n", []string{`api.timeout: "0s" is not a duration above 0 and up to 1h, e.g. 60s`}},
		{"timeout long", minimal + "api:\n  timeout: 61m\n", []string{`api.timeout: "61m" is not a duration`}},
		{"timeout unit", minimal + "api:\n  timeout: 60\n", []string{`api.timeout: "60" is not a duration`}},
		{"answer timeout shorter than timeout", minimal + "api:\n  timeout: 2m\n  answer_timeout: 1m\n", []string{"api.answer_timeout: 1m0s is shorter than api.timeout 2m0s"}},
		{"answer timeout long", minimal + "api:\n  answer_timeout: 25h\n", []string{`api.answer_timeout: "25h" is not a duration`}},
		{"concurrency zero", minimal + "api:\n  concurrency: 0\n", []string{`api.concurrency: "0" is not a whole number from 1 to 32`}},
		{"concurrency large", minimal + "api:\n  concurrency: 33\n", []string{`api.concurrency: "33" is not a whole number from 1 to 32`}},
		{"concurrency word", minimal + "api:\n  concurrency: four\n", []string{`api.concurrency: "four" is not a whole number`}},
		{"max_retries", minimal + "api:\n  max_retries: 51\n", []string{`api.max_retries: "51" is not a whole number from 0 to 50`}},
		{"max_retries negative", minimal + "api:\n  max_retries: -1\n", []string{`api.max_retries: "-1" is not a whole number from 0 to 50`}},
		{"paths unknown", minimal + "api:\n  paths:\n    usages: /x\n", []string{"api.paths.usages: unknown resource; known: locations, organization, payment_method, payment_methods, project_usage, projects, rate_card, usage; did you mean usage?"}},
		{"paths relative", minimal + "api:\n  paths:\n    usage: api/v1/usage\n", []string{`api.paths.usage: "api/v1/usage" must be a path on the base address starting with a single /`}},
		{"paths another host", minimal + "api:\n  paths:\n    usage: //evil.example/usage\n", []string{`api.paths.usage: "//evil.example/usage" must be a path`}},
		{"paths placeholder", minimal + "api:\n  paths:\n    rate_card: /pm/rateCard\n", []string{`api.paths.rate_card: "/pm/rateCard" must carry the placeholders {id}`}},
		{"paths not a mapping", minimal + "api:\n  paths: [a]\n", []string{"api.paths: must be a mapping of resource to path"}},
		{"tolerance negative", minimal + "reports:\n  tolerance: -0.1\n", []string{`reports.tolerance: "-0.1" is not a fraction from 0 to 1`}},
		{"tolerance above one", minimal + "reports:\n  tolerance: 1.5\n", []string{`reports.tolerance: "1.5" is not a fraction`}},
		{"tolerance NaN", minimal + "reports:\n  tolerance: .nan\n", []string{`reports.tolerance: ".nan" is not a fraction`}},
		{"close_after unit", minimal + "reports:\n  close_after: 5 days\n", []string{`reports.close_after: "5 days" is not <n>d or <n>h with n ≥ 1 (the time after a month's end at which the nightly job closes it), e.g. 5d`}},
		{"close_after zero", minimal + "reports:\n  close_after: 0d\n", []string{`reports.close_after: "0d" is not <n>d or <n>h with n ≥ 1`}},
		{"close_after long", minimal + "reports:\n  close_after: 400d\n", []string{`reports.close_after: "400d" is longer than a year (366d)`}},
		{"months", minimal + "reports:\n  months: [previous, last]\n", []string{`reports.months[1]: "last" is not one of previous, current`}},
		{"jobs not a list", minimal + "schedule:\n  jobs: nightly\n", []string{`schedule.jobs: must be a list, not "nightly"`}},
		{"job name missing", minimal + "schedule:\n  jobs:\n    - cron: \"@daily\"\n      run: [fetch]\n", []string{"schedule.jobs[0].name: missing"}},
		{"job names unique", minimal + "schedule:\n  jobs:\n    - {name: a, cron: '@daily', run: [fetch]}\n    - {name: a, cron: '@hourly', run: [report]}\n", []string{`schedule.jobs[1].name: "a" is the name of another job`}},
		{"job cron missing", minimal + "schedule:\n  jobs:\n    - {name: a, cron: ' ', run: [fetch]}\n", []string{"schedule.jobs[0].cron: missing"}},
		{"job run step", minimal + "schedule:\n  jobs:\n    - {name: a, cron: '@daily', run: [fetch, mail]}\n", []string{`schedule.jobs[0].run[1]: "mail" is not one of fetch, report, close, deliver, alerts, export`}},
		{"job run empty", minimal + "schedule:\n  jobs:\n    - {name: a, cron: '@daily', run: []}\n", []string{"schedule.jobs[0].run: missing"}},
		{"job not a mapping", minimal + "schedule:\n  jobs:\n    - nightly\n", []string{`schedule.jobs[0]: must be a mapping with keys name, cron, run, not "nightly"`}},
		{"lock_wait", minimal + "schedule:\n  lock_wait: -1s\n", []string{`schedule.lock_wait: "-1s" is not a duration from 0 up to 24h, e.g. 10m`}},
		{"grace", minimal + "schedule:\n  grace: 2h\n", []string{`schedule.grace: "2h" is not a duration from 0 up to 1h, e.g. 30s`}},
		{"deliver dir missing", minimal + "reports:\n  deliver:\n    dir: /nonexistent/finance\n", []string{`reports.deliver.dir: "/nonexistent/finance" does not exist; give a folder Tally may write into`}},
		{"deliver dir a file", minimal + "reports:\n  deliver:\n    dir: /etc/hostname\n", []string{`reports.deliver.dir: "/etc/hostname" is not a folder`}},
		{"smtp timeout", minimal + "reports:\n  deliver:\n    smtp: {host: h, from: a@b, to: [c@d], timeout: 0s}\n", []string{`reports.deliver.smtp.timeout: "0s" is not a duration above 0 and up to 1h, e.g. 2m`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.yml), "/etc/tally", noEnv)
			var ce *Error
			if !errors.As(err, &ce) {
				t.Fatalf("config:\n%s\nerror %v, want a *configs.Error", tc.yml, err)
			}
			msg := err.Error()
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Errorf("config:\n%s\nerror:\n%s\nwant it to contain %q", tc.yml, msg, w)
				}
			}
			if strings.Contains(msg, "hunter2") {
				t.Errorf("error repeats a password: %s", msg)
			}
			if len(ce.Problems) != len(tc.want) {
				t.Errorf("%d problems, want %d:\n%s", len(ce.Problems), len(tc.want), msg)
			}
		})
	}
}

// All problems are reported at once, one a line, so one edit fixes a config.
func TestValidationCollectsAll(t *testing.T) {
	yml := `
api:
  base_url: http://example.com
  concurrency: 0
  colour: blue
usage:
  granularity: hourly
  lookback: 1w
schedule:
  jobs:
    - {name: a, cron: "@daily", run: [mail]}
`
	_, err := Parse([]byte(yml), "", noEnv)
	var ce *Error
	if !errors.As(err, &ce) {
		t.Fatalf("error %v, want *Error", err)
	}
	want := []string{"api.colour", "api.base_url", "api.concurrency", "usage.granularity", "usage.start", "usage.lookback", "schedule.jobs[0].run[0]"}
	if len(ce.Problems) != len(want) {
		t.Fatalf("%d problems, want %d:\n%s", len(ce.Problems), len(want), err)
	}
	for i, w := range want {
		if !strings.HasPrefix(ce.Problems[i], w+":") {
			t.Errorf("problem %d = %q, want it about %s", i, ce.Problems[i], w)
		}
	}
	if lines := strings.Split(err.Error(), "\n"); len(lines) != len(want)+1 || lines[0] != "invalid config:" {
		t.Errorf("error text is not a heading and one problem a line:\n%s", err)
	}
}

func TestEnvOverrides(t *testing.T) {
	yml := minimal + "api:\n  base_url: https://app.mk.io\nstore:\n  path: db/t.duckdb\n"
	cfg := mustParse(t, yml, env("TALLY_BASE_URL", "http://127.0.0.1:9999/", "TALLY_DB", "/tmp/x.duckdb"))
	if cfg.API.BaseURL != "http://127.0.0.1:9999" || cfg.Store.Path != "/tmp/x.duckdb" {
		t.Errorf("overrides not applied: base %q db %q", cfg.API.BaseURL, cfg.Store.Path)
	}
	// A relative TALLY_DB is relative to where it was typed, not to the
	// config's folder.
	cfg = mustParse(t, yml, env("TALLY_DB", "here.duckdb"))
	if cfg.Store.Path != "here.duckdb" || cfg.API.BaseURL != "https://app.mk.io" {
		t.Errorf("TALLY_DB relative: %q, base %q", cfg.Store.Path, cfg.API.BaseURL)
	}
	_, err := Parse([]byte(yml), "", env("TALLY_BASE_URL", "http://example.com"))
	if err == nil || !strings.Contains(err.Error(), `api.base_url (from TALLY_BASE_URL): "http://example.com" uses http`) {
		t.Errorf("a bad TALLY_BASE_URL should be named: %v", err)
	}
}

func TestLoadExample(t *testing.T) {
	cfg, err := Load("tally.example.yaml", noEnv)
	if err != nil {
		t.Fatal(err)
	}
	dir, _ := filepath.Abs(".")
	if cfg.Path != filepath.Join(dir, "tally.example.yaml") {
		t.Errorf("Path = %q", cfg.Path)
	}
	// The example holds the defaults, so it loads to what a minimal config
	// gives.
	def := mustParse(t, minimal, noEnv)
	def.Store.Path = filepath.Join(dir, "data/tally.duckdb")
	def.Reports.Dir = filepath.Join(dir, "reports")
	def.Export.Dir = filepath.Join(dir, "exports")
	def.Path = cfg.Path
	if !reflect.DeepEqual(cfg, def) {
		t.Errorf("example:\n got %+v\nwant %+v", cfg, def)
	}
}

// The example documents every key, each with a comment, and no others.
func TestExampleDocumentsEveryKey(t *testing.T) {
	data, err := os.ReadFile("tally.example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	keyRE := regexp.MustCompile(`^(\s*)(?:#\s*|-\s*)?([a-z_][a-z0-9_]*):`)
	type key struct{ section, name string }
	found := map[key]bool{}
	section := ""
	for _, line := range strings.Split(string(data), "\n") {
		m := keyRE.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		if m[1] == "" && !strings.HasPrefix(line, "#") {
			section = m[2]
			found[key{"", section}] = true
			continue
		}
		if m[1] == "" {
			continue // prose comments at the top
		}
		if section == "" {
			t.Fatalf("key %q before any section", m[2])
		}
		found[key{section, m[2]}] = true
	}
	want := map[key]bool{}
	top := reflect.TypeOf(rawConfig{})
	for i := 0; i < top.NumField(); i++ {
		sec := top.Field(i).Tag.Get("yaml")
		want[key{"", sec}] = true
		st := top.Field(i).Type
		for st.Kind() == reflect.Pointer || st.Kind() == reflect.Slice {
			st = st.Elem() // budgets: a list of entries
		}
		for j := 0; j < st.NumField(); j++ {
			want[key{sec, st.Field(j).Tag.Get("yaml")}] = true
		}
	}
	for _, f := range []string{"name", "cron", "run"} {
		want[key{"schedule", f}] = true
	}
	// lake.s3's keys are shown one level down, commented out.
	s3 := reflect.TypeOf(rawS3{})
	for j := 0; j < s3.NumField(); j++ {
		want[key{"lake", s3.Field(j).Tag.Get("yaml")}] = true
	}
	// allocation's entries, as schedule's jobs, are shown one level down.
	for _, f := range []string{"name", "owner", "projects", "from", "share", "to", "method", "percent", "driver"} {
		want[key{"allocation", f}] = true
	}
	if !reflect.DeepEqual(found, want) {
		var missing, extra []string
		for k := range want {
			if !found[k] {
				missing = append(missing, k.section+"."+k.name)
			}
		}
		for k := range found {
			if !want[k] {
				extra = append(extra, k.section+"."+k.name)
			}
		}
		t.Errorf("example keys differ: missing %v, unknown %v", missing, extra)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if m := keyRE.FindStringSubmatch(line); m != nil && m[1] != "" && !strings.Contains(line, "#") &&
			!slices.Contains([]string{"name", "cron", "jobs"}, m[2]) {
			t.Errorf("key line without a comment: %q", line)
		}
	}
}

func TestLoadResolvesRelativePaths(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "conf", "tally.yaml")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	yml := minimal + "api:\n  token_file: ../secret/token\nstore:\n  path: data/t.duckdb\nreports:\n  dir: /abs/reports\n"
	if err := os.WriteFile(path, []byte(yml), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := Load(path, noEnv)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.API.TokenFile != filepath.Join(dir, "secret", "token") || cfg.Store.Path != filepath.Join(dir, "conf", "data", "t.duckdb") ||
		cfg.Reports.Dir != "/abs/reports" || cfg.Path != path || cfg.API.TokenEnv != "" {
		t.Errorf("paths: token %q store %q reports %q path %q token_env %q", cfg.API.TokenFile, cfg.Store.Path, cfg.Reports.Dir, cfg.Path, cfg.API.TokenEnv)
	}
}

func TestLoadErrors(t *testing.T) {
	dir := t.TempDir()
	_, err := Load(filepath.Join(dir, "nope.yaml"), noEnv)
	var ce *Error
	if !errors.As(err, &ce) || ce.Path != filepath.Join(dir, "nope.yaml") || !strings.Contains(err.Error(), "no such file") || !strings.Contains(err.Error(), "--config") {
		t.Errorf("missing file: %v", err)
	}
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("usage:\n  granularity: hourly\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = Load(bad, noEnv)
	if !errors.As(err, &ce) || ce.Path != bad || !strings.HasPrefix(err.Error(), "invalid config "+bad+":\n  ") {
		t.Errorf("invalid file: %v", err)
	}
	big := filepath.Join(dir, "big.yaml")
	if err := os.WriteFile(big, []byte(minimal+"#"+strings.Repeat("x", maxConfigSize)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err = Load(big, noEnv); !errors.As(err, &ce) || !strings.Contains(err.Error(), "more than the") {
		t.Errorf("huge file: %v", err)
	}
}

func TestToken(t *testing.T) {
	const secret = "s3cr3t-T0ken"
	cfg := mustParse(t, minimal, noEnv)
	tok, err := cfg.Token(env("TALLY_API_TOKEN", "  "+secret+"\n"))
	if err != nil || tok.Reveal() != secret {
		t.Errorf("token from env = %q, %v", tok, err)
	}
	_, err = cfg.Token(noEnv)
	if err == nil || !strings.Contains(err.Error(), "TALLY_API_TOKEN is not set") || !strings.Contains(err.Error(), "api.token_file") {
		t.Errorf("missing env token: %v", err)
	}
	cfg = mustParse(t, minimal+"api:\n  token_env: MY_TOKEN\n", noEnv)
	if tok, err := cfg.Token(env("MY_TOKEN", secret, "TALLY_API_TOKEN", "other")); err != nil || tok.Reveal() != secret {
		t.Errorf("token from MY_TOKEN = %q, %v", tok, err)
	}
	_, err = cfg.Token(env("MY_TOKEN", "two words"))
	if err == nil || !strings.Contains(err.Error(), "MY_TOKEN contains spaces") || strings.Contains(err.Error(), "words") {
		t.Errorf("token with a space: %v", err)
	}

	dir := t.TempDir()
	file := filepath.Join(dir, "token")
	if err := os.WriteFile(file, []byte(secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err = Parse([]byte(minimal+"api:\n  token_file: token\n"), dir, noEnv)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Warnings) != 0 {
		t.Errorf("mode 600 token file warned: %v", cfg.Warnings)
	}
	if tok, err := cfg.Token(env("TALLY_API_TOKEN", "not this")); err != nil || tok.Reveal() != secret {
		t.Errorf("token from file = %q, %v", tok, err)
	}

	if err := os.Chmod(file, 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err = Parse([]byte(minimal+"api:\n  token_file: token\n"), dir, noEnv)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Warnings) != 1 || !strings.Contains(cfg.Warnings[0], file+" is readable by group or others (mode 0644); chmod 600 it") {
		t.Errorf("mode 644 token file warnings = %v", cfg.Warnings)
	}

	for name, content := range map[string]string{"empty": " \n", "multi": secret + "\nsecond line\n", "control": "a\x00b"} {
		if err := os.WriteFile(file, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := cfg.Token(noEnv)
		if err == nil || !strings.Contains(err.Error(), file) || strings.Contains(err.Error(), secret) {
			t.Errorf("%s token file: %v", name, err)
		}
	}
	if err := os.Remove(file); err != nil {
		t.Fatal(err)
	}
	_, err = cfg.Token(noEnv)
	if err == nil || !strings.Contains(err.Error(), "read the api token: api.token_file "+file+": no such file or directory; put the token in that file (mode 600) or set api.token_env instead") {
		t.Errorf("missing token file: %v; want the key, the path, the reason and what to do", err)
	}
}

func TestUsageQueryBase(t *testing.T) {
	cfg := mustParse(t, minimal+"  format: csv\n  reported_date: true\n  project_names: [b, a]\n  meter_names: [m]\n", noEnv)
	q := cfg.UsageQueryBase()
	if q.Format != tally.FormatCSV || !q.ReportedDate || q.Basis() != tally.BasisReported || q.Scope() != "projects=a,b;meters=m" || !q.Window.Start.IsZero() {
		t.Errorf("query = %+v scope %q", q, q.Scope())
	}
	q.ProjectNames[0] = "changed"
	if cfg.Usage.ProjectNames[0] != "b" {
		t.Error("UsageQueryBase shares its slices with the config")
	}
}

// docs/operators.md shows the example config as the config reference, as
// it is: a key added to the example is in the operators' docs too.
func TestOperatorsDocShowsTheExample(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "docs", "operators.md"))
	if err != nil {
		t.Fatal(err)
	}
	example, err := os.ReadFile("tally.example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(doc), "```yaml\n"+strings.TrimRight(string(example), "\n")+"\n```") {
		t.Fatal("docs/operators.md does not show configs/tally.example.yaml as it is: copy the file into its yaml block under Config")
	}
}
