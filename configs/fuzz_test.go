package configs

import (
	"errors"
	"strings"
	"testing"

	"github.com/tally-dev/tally"
)

// FuzzParseConfig feeds Parse arbitrary text: it must never panic, every
// failure must be a *Error with problems, and every config it accepts must
// hold only values the validation allows. Seeds are in
// testdata/fuzz/FuzzParseConfig.
func FuzzParseConfig(f *testing.F) {
	f.Add([]byte(minimal))
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := Parse(data, "/etc/tally", env("TALLY_DB", ""))
		if err != nil {
			var ce *Error
			if !errors.As(err, &ce) || len(ce.Problems) == 0 {
				t.Fatalf("error %v is not a *Error with problems", err)
			}
			for _, p := range ce.Problems {
				if p == "" || strings.Contains(p, "\n") && !strings.Contains(p, "YAML") {
					t.Fatalf("problem %q is not one line", p)
				}
			}
			return
		}
		a, u := cfg.API, cfg.Usage
		switch {
		case !u.Granularity.Valid(), u.Start.IsZero(), u.Lookback < 0,
			tally.CheckWindowSize(u.Granularity, u.Window) != nil,
			u.Format != tally.FormatJSON && u.Format != tally.FormatCSV,
			len(u.ProjectNames) > 0 && len(u.PaymentMethodIDs) > 0,
			a.Concurrency < 1 || a.Concurrency > 32, a.MaxRetries < 0 || a.MaxRetries > 50,
			a.Timeout <= 0, (a.TokenEnv == "") == (a.TokenFile == ""),
			!strings.HasPrefix(a.BaseURL, "https://") && !strings.HasPrefix(a.BaseURL, "http://"),
			cfg.Reports.Tolerance < 0 || cfg.Reports.Tolerance > 1,
			cfg.Store.Path == "", cfg.Reports.Dir == "":
			t.Fatalf("accepted an invalid config: %+v", cfg)
		}
		for k, v := range a.Paths {
			if _, ok := tally.DefaultPaths[k]; !ok || !strings.HasPrefix(v, "/") || strings.HasPrefix(v, "//") {
				t.Fatalf("accepted path %s = %q", k, v)
			}
		}
		names := map[string]bool{}
		for _, j := range cfg.Schedule.Jobs {
			if j.Name == "" || names[j.Name] || j.Cron == "" || len(j.Run) == 0 {
				t.Fatalf("accepted job %+v", j)
			}
			names[j.Name] = true
		}
	})
}
