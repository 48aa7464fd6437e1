package configs

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/tally-dev/tally/internal/secret"
)

// TestRegisterSecretsKnowsEverySecret walks the config's types for every
// field naming where a secret is read (a name ending in Env or File), sets
// each in turn to a secret of its own, and checks RegisterSecrets gives it
// to the redaction step. A secret key added later without registering it
// fails here.
func TestRegisterSecretsKnowsEverySecret(t *testing.T) {
	dir := t.TempDir()
	found := 0
	var walk func(typ reflect.Type, path []int)
	walk = func(typ reflect.Type, path []int) {
		for i := range typ.NumField() {
			f := typ.Field(i)
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			p := append(append([]int(nil), path...), i)
			switch {
			case ft.Kind() == reflect.Struct && ft.PkgPath() == typ.PkgPath():
				walk(ft, p)
			case ft.Kind() == reflect.String && (strings.HasSuffix(f.Name, "Env") || strings.HasSuffix(f.Name, "File")):
				found++
				value := "secret-of-" + strings.ToLower(f.Name) + "-" + typ.Name()
				cfg := &Config{Alerts: AlertsConfig{Webhook: &WebhookConfig{URL: "https://hooks.example.com/"}},
					Reports: ReportsConfig{Deliver: DeliverConfig{SMTP: &SMTPConfig{}}}, API: APIConfig{TokenEnv: "UNSET_FOR_TEST"}}
				field := fieldByPath(reflect.ValueOf(cfg).Elem(), p)
				getenv := func(string) string { return "" }
				if strings.HasSuffix(f.Name, "Env") {
					field.SetString("SECRET_UNDER_TEST")
					getenv = func(name string) string {
						if name == "SECRET_UNDER_TEST" {
							return value
						}
						return ""
					}
				} else {
					file := filepath.Join(dir, f.Name+typ.Name())
					if err := os.WriteFile(file, []byte(value+"\n"), 0o600); err != nil {
						t.Fatal(err)
					}
					field.SetString(file)
					if f.Name == "TokenFile" {
						cfg.API.TokenEnv = ""
					}
				}
				cfg.RegisterSecrets(getenv)
				if got := secret.Redact("peer said " + value); strings.Contains(got, value) {
					t.Errorf("%s.%s: RegisterSecrets did not register the secret it names: %q", typ.Name(), f.Name, got)
				}
			}
		}
	}
	walk(reflect.TypeOf(Config{}), nil)
	if found < 6 {
		t.Fatalf("found %d secret keys, want at least the token's, the SMTP password's and the webhook secret's (6)", found)
	}
}

// fieldByPath follows field indexes from v, allocating nil pointers.
func fieldByPath(v reflect.Value, path []int) reflect.Value {
	for _, i := range path {
		if v.Kind() == reflect.Pointer {
			if v.IsNil() {
				v.Set(reflect.New(v.Type().Elem()))
			}
			v = v.Elem()
		}
		v = v.Field(i)
	}
	return v
}

// TestLoadRegistersTheWebhookAddress: Load registers the path and query of
// alerts.webhook.url, which are the webhook's credential.
func TestLoadRegistersTheWebhookAddress(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "tally.yaml")
	yaml := "usage:\n  start: 2026-01-01\nalerts:\n  webhook: {url: \"https://hooks.example.com/services/T9/B9/LoadPathSecret42?sig=LoadQuerySecret42\"}\n"
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(path, func(string) string { return "" }); err != nil {
		t.Fatal(err)
	}
	got := secret.Redact("400 no hook at /services/T9/B9/LoadPathSecret42?sig=LoadQuerySecret42 (LOADPATHSECRET42)")
	if strings.Contains(strings.ToLower(got), "loadpathsecret42") || strings.Contains(got, "LoadQuerySecret42") || !strings.Contains(got, "400 no hook at") {
		t.Errorf("after Load: %q", got)
	}
}

// CheckSecrets reads the secrets the steps to run need, and only those: an
// unset webhook secret is refused for fetch and alerts (which send alerts),
// an unset mail password for deliver, each by its key and variable, and
// neither for report or close.
func TestCheckSecretsNamesEachMissingKey(t *testing.T) {
	dir := t.TempDir()
	cfg := mustParse(t, minimal+`alerts:
  webhook:
    url: https://hooks.example.com/tally
    secret_env: TALLY_TEST_WEBHOOK_SECRET
reports:
  deliver:
    smtp: {host: smtp.example.com, from: tally@example.com, to: [finance@example.com], username: tally, password_env: TALLY_TEST_SMTP_PASSWORD}
`, noEnv)
	webhook := "alerts.webhook.secret_env: the environment variable TALLY_TEST_WEBHOOK_SECRET is not set or empty; export the webhook's signing secret in it, or point alerts.webhook.secret_file at a file holding it"
	smtp := "reports.deliver.smtp.password_env: the environment variable TALLY_TEST_SMTP_PASSWORD is not set or empty; export the mail password in it, or point reports.deliver.smtp.password_file at a file holding it"
	for _, tc := range []struct {
		steps []string
		want  []string
	}{
		{[]string{"fetch"}, []string{webhook}},
		{[]string{"alerts"}, []string{webhook}},
		{[]string{"deliver"}, []string{smtp}},
		{[]string{"fetch", "report", "close", "deliver"}, []string{webhook, smtp}},
		{[]string{"report", "close", "export"}, nil},
		{nil, nil},
	} {
		err := cfg.CheckSecrets(noEnv, tc.steps)
		var got []string
		var ce *Error
		if errors.As(err, &ce) {
			got = ce.Problems
		} else if err != nil {
			t.Errorf("steps %v: error %v, want a *configs.Error", tc.steps, err)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("steps %v: problems\n%q\nwant\n%q", tc.steps, got, tc.want)
		}
	}
	set := env("TALLY_TEST_WEBHOOK_SECRET", "whsec", "TALLY_TEST_SMTP_PASSWORD", "pw")
	if err := cfg.CheckSecrets(set, []string{"fetch", "deliver"}); err != nil {
		t.Errorf("with both set: %v", err)
	}

	// Files: missing and empty are named by key and path.
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, []byte(" \n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg.Alerts.Webhook.SecretEnv, cfg.Alerts.Webhook.SecretFile = "", filepath.Join(dir, "nope")
	cfg.Reports.Deliver.SMTP.PasswordEnv, cfg.Reports.Deliver.SMTP.PasswordFile = "", empty
	err := cfg.CheckSecrets(set, []string{"alerts", "deliver"})
	for _, w := range []string{
		"alerts.webhook.secret_file: open " + filepath.Join(dir, "nope") + ": no such file or directory",
		"reports.deliver.smtp.password_file: " + empty + " is empty; put the mail password in it",
	} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("secret files: %v\nwant it to contain %q", err, w)
		}
	}
}
