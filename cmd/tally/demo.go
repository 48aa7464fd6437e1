package main

import (
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/rs/zerolog"

	"github.com/tally-dev/tally"
	"github.com/tally-dev/tally/closes"
	"github.com/tally-dev/tally/configs"
	"github.com/tally-dev/tally/fetch/sim"
	"github.com/tally-dev/tally/ingest"
	"github.com/tally-dev/tally/internal/secret"
	"github.com/tally-dev/tally/job"
	"github.com/tally-dev/tally/reports"
	"github.com/tally-dev/tally/schedules"
	"github.com/tally-dev/tally/store"
)

func init() { commands = append(commands, newDemoCmd) }

func newDemoCmd(g *globalFlags) *cobra.Command {
	var dir, source string
	cmd := &cobra.Command{
		Use:   "demo [--dir DIR] [--source organization|projects]",
		Short: "Run the whole nightly path against the built-in simulated interface",
		Long: `Starts the simulated management interface on loopback, fetches its usage
and reference data into a fresh DuckDB file, and writes the cost workbook of
the last full month. It then closes that month (its final workbook), lets the
simulated provider correct a day of it, fetches the day again (--refetch) and
writes the month's workbook anew, which shows the adjustment. Everything stays
in --dir.

With --source projects it reads each project's own usage report instead
(quantities only), once a night from the start of the previous month, and
prices it from the rate card: the workbook is estimated, not an invoice.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			log, err := newLogger(g, os.Stderr)
			if err != nil {
				return err
			}
			if source != tally.SourceOrganization && source != tally.SourceProjects {
				return usageErr("--source %q is not one of organization, projects", source)
			}
			// The demo's day is the command's clock (a test fixes it: with
			// --source projects the demo reads every other night since the
			// first of the previous month); how long it took is real time.
			started, began := time.Now(), clock()
			res, err := runDemo(cmd.Context(), dir, log, version, began, source)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "\nDemo done in %s.\n", time.Since(started).Round(time.Millisecond))
			fmt.Fprintf(out, "  workbook:        %s\n", res.Workbook)
			if res.Final != "" {
				rev := demoRevision(began)
				fmt.Fprintf(out, "  final workbook:  %s\n", res.Final)
				fmt.Fprintf(out, "                   (the demo closed %s, then the provider corrected %s and tally fetch --refetch\n", rev.Day.Format("2006-01"), rev.Day.Format(tally.DateLayout))
				fmt.Fprintf(out, "                   loaded it: the final stays as signed; the workbook shows the adjustment)\n")
			}
			for _, st := range res.Statements {
				fmt.Fprintf(out, "  statement:       %s (%s)\n", st.Path, st.CostCentre)
			}
			fmt.Fprintf(out, "  database:        %s\n", res.Database)
			fmt.Fprintf(out, "  analysts' copy:  %s\n", res.Published)
			fmt.Fprintf(out, "  config:          %s\n", res.Config)
			what := "windows"
			if res.Nightly.Fetch.Projects {
				what = "project reports (estimated from the rate card: not an invoice)"
			}
			fmt.Fprintf(out, "  fetched:         %d %s, %d rows, %d requests\n",
				res.Nightly.Fetch.Loaded, what, res.Nightly.Fetch.Rows, res.Nightly.Fetch.Requests)
			if a := res.Nightly.Fetch.Alerts; len(a.Budgets) > 0 || len(a.New) > 0 {
				fmt.Fprintf(out, "\nBudgets this month (tally status shows them too):\n")
				for _, b := range a.Budgets {
					fmt.Fprintf(out, "  %-9s %s so far (%.0f%%), forecast %s (%.0f%%) of %s %s\n", b.Budget.Name,
						b.Actual, b.ActualRatio()*100, b.Forecast, b.ForecastRatio()*100, b.Budget.Amount, b.Budget.Currency)
				}
				fmt.Fprintf(out, "Alerts sent to the log (alerts.webhook would get them too):\n")
				for _, al := range a.New {
					fmt.Fprintf(out, "  %s\n", al.Text)
				}
			}
			cfg := shellQuote(res.Config)
			// Each counts every charge once: usage holds every granularity
			// and basis loaded, so a sum straight over it counts a charge
			// once for each.
			fmt.Fprintf(out, "\nThree queries to try:\n")
			basis := "usage"
			if res.Nightly.Fetch.Projects {
				basis = "estimated"
			}
			fmt.Fprintf(out, "  go run ./cmd/tally query --config %s \"SELECT project, currency, sum(cost) AS cost FROM usage_finest WHERE basis = '%s' GROUP BY ALL ORDER BY ALL\"\n", cfg, basis)
			fmt.Fprintf(out, "  go run ./cmd/tally query --config %s --name cost_by_project_month\n", cfg)
			fmt.Fprintf(out, "  go run ./cmd/tally query --config %s --format csv \"SELECT * FROM fetch_windows ORDER BY start\"\n", cfg)
			return nil
		},
	}
	cmd.Flags().StringVar(&dir, "dir", "tally-demo", "folder for the demo's config, database and workbook")
	cmd.Flags().StringVar(&source, "source", tally.SourceOrganization, "usage source: organization (the organization's report) or projects (each project's report, priced from the rate card)")
	return cmd
}

// shellQuote makes a path safe to paste into a POSIX shell: as it is when it
// holds only characters no shell treats specially, else in single quotes.
func shellQuote(s string) string {
	safe := s != ""
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("@%+=:,./_-", r)) {
			safe = false
			break
		}
	}
	if safe {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// demoResult says where the demo put things.
type demoResult struct {
	Dir       string
	Config    string
	Database  string
	Published string
	Workbook  string
	Final     string // the final workbook of the month the demo closed
	// Statements are the chargeback statements of the month, one per
	// cost centre.
	Statements []reports.Statement
	BaseURL    string
	Nightly    nightlySummary
}

// runDemo runs the whole nightly path on this machine: the simulated interface
// on loopback, a config written into dir, a fetch into a fresh DuckDB file
// and the workbook of the last full month. dir is created if missing; a
// database already there is replaced so every demo starts fresh.
func runDemo(ctx context.Context, dir string, log zerolog.Logger, version string, now time.Time, source string) (demoResult, error) {
	var res demoResult
	abs, err := filepath.Abs(dir)
	if err != nil {
		return res, err
	}
	res.Dir = abs
	if err := os.MkdirAll(abs, 0o750); err != nil {
		return res, fmt.Errorf("create demo folder: %w", err)
	}
	token, err := randomToken(now)
	if err != nil {
		return res, err
	}

	// The simulated organization's usage starts on the first of the
	// previous month, so the demo has one full month and the month to date.
	start := tally.Month.Truncate(now).AddDate(0, -1, 0)
	// The clock the interface and the runs share: with source projects,
	// the demo reads each project's month to date night after night, as
	// the nightly job would have, before today's run.
	clock := now
	tick := func() time.Time { return clock }
	srv := sim.New(sim.Options{Token: token, Seed: 1, Start: start, Now: tick, Spike: demoSpike(now), Revisions: []sim.Spike{demoRevision(now)}})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return res, fmt.Errorf("start simulated interface: %w", err)
	}
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second}
	go hs.Serve(ln)
	defer hs.Close()
	res.BaseURL = "http://" + ln.Addr().String()

	tokenFile := filepath.Join(abs, "token")
	if err := os.WriteFile(tokenFile, []byte(token+"\n"), 0o600); err != nil {
		return res, fmt.Errorf("write demo token: %w", err)
	}
	res.Config = filepath.Join(abs, "tally.yaml")
	res.Database = filepath.Join(abs, "tally.duckdb")
	for _, p := range []string{res.Database, res.Database + ".wal", store.PublishedPath(res.Database)} {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			return res, fmt.Errorf("clear previous demo database: %w", err)
		}
	}
	// Budgets count the organization's report (basis usage), which the
	// projects source does not read.
	granularity, sourceYAML, budgetsYAML := "hour", "", `budgets:
  - name: platform
    currency: USD
    amount: 9000
  - name: newsroom
    scope: project:newsroom
    currency: USD
    amount: 3000
`
	if source == tally.SourceProjects {
		granularity, budgetsYAML = "day", ""
		sourceYAML = "\n  source: projects\n  project_names: [archive, newsroom, sports-live, training]"
	}
	// Two cost centres own the news and sport projects; training is the
	// shared platform, charged back to both in proportion to their own
	// usage.
	allocationYAML := fmt.Sprintf(`allocation:
  cost_centres:
    - name: News
      owner: news-finance@example.com
      projects: [newsroom, archive]
    - name: Sport
      owner: sport-finance@example.com
      projects: [sports-live]
  rules:
    - name: platform
      from: %s
      share: {projects: [training]}
      to: [News, Sport]
      method: proportional
`, start.Format("2006-01"))
	yaml := fmt.Sprintf(`# Written by tally demo: the simulated interface it served is gone now,
# but the database and the analysts' copy stay for tally query.
api:
  base_url: %s
  token_file: token
  concurrency: 4
usage:
  granularity: %s
  start: %s
  lookback: 2d%s
store:
  path: tally.duckdb
reports:
  dir: reports
  months: [previous]
%s%s`, res.BaseURL, granularity, start.Format(tally.DateLayout), sourceYAML, budgetsYAML, allocationYAML)
	if err := os.WriteFile(res.Config, []byte(yaml), 0o600); err != nil {
		return res, fmt.Errorf("write demo config: %w", err)
	}
	cfg, err := configs.Load(res.Config, func(string) string { return "" })
	if err != nil {
		return res, fmt.Errorf("demo config: %w", err)
	}
	r := &schedules.Runner{Config: cfg, CheckToken: ingest.CheckOrgToken, Token: secret.New(token), Log: log, Version: version, Now: tick}
	if source == tally.SourceProjects {
		// A read at 23:50 UTC every other evening from the start of the
		// previous month and on its last evening (the month's final
		// figures: the next read gives the new month), quietly: today's
		// run below logs as usual.
		quiet := &schedules.Runner{Config: cfg, CheckToken: ingest.CheckOrgToken, Token: secret.New(token), Log: log.Level(zerolog.FatalLevel), Version: version, Now: tick}
		var nights []time.Time
		for night := start.Add(23*time.Hour + 50*time.Minute); night.Before(now); night = night.AddDate(0, 0, 2) {
			nights = append(nights, night)
		}
		if last := start.AddDate(0, 1, -1).Add(23*time.Hour + 50*time.Minute); last.Before(now) && !slices.Contains(nights, last) {
			nights = append(nights, last)
			slices.SortFunc(nights, time.Time.Compare)
		}
		for _, night := range nights {
			clock = night
			// A project created later in the month is missing (404) from
			// the reads before: those runs are partial, as they would be.
			var partial *job.Partial
			if _, err := fetchRun(ctx, quiet, ingest.FetchOptions{}); err != nil && !errors.As(err, &partial) {
				return res, fmt.Errorf("read of %s: %w", night.Format(tally.DateLayout), err)
			}
		}
		clock = now
	}
	res.Nightly, err = nightly(ctx, r, nil)
	if err != nil {
		return res, err
	}
	res.Published = res.Nightly.Fetch.Published
	if len(res.Nightly.Reports) > 0 {
		res.Workbook = res.Nightly.Reports[0].Path
	}
	if source == tally.SourceProjects {
		return res, demoStatements(ctx, cfg, &res, start, tick, log)
	}
	// Finance closes the last month; an hour later the provider corrects
	// a day of it (the interface's revision appears then), and the day is
	// fetched again: the month's final workbook stays as signed, and the
	// month's workbook, written again, shows the adjustment.
	sum, err := closes.Close(ctx, r, r.Config, closes.CloseOptions{Month: start, Who: "tally demo", Reason: "demo: the month signed off"})
	if err != nil {
		return res, fmt.Errorf("demo close: %w", err)
	}
	res.Final = sum.Close.FinalWorkbook
	rev := demoRevision(now)
	clock = rev.From.Add(30 * time.Minute)
	if _, err := fetchRun(ctx, r, ingest.FetchOptions{From: rev.Day, To: rev.Day.AddDate(0, 0, 1), Refetch: true}); err != nil {
		return res, fmt.Errorf("demo refetch of %s: %w", rev.Day.Format(tally.DateLayout), err)
	}
	pub, err := schedules.OpenPublished(ctx, cfg, log)
	if err != nil {
		return res, err
	}
	defer pub.Close()
	if _, err := reports.Report(ctx, cfg, pub.DB(), start, "", res.Workbook, tick, log); err != nil {
		return res, err
	}
	return res, demoStatements(ctx, cfg, &res, start, tick, log)
}

// demoStatements writes the month's chargeback statements, as tally report
// --chargeback does, from the analysts' copy.
func demoStatements(ctx context.Context, cfg *configs.Config, res *demoResult, month time.Time, now func() time.Time, log zerolog.Logger) error {
	pub, err := schedules.OpenPublished(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer pub.Close()
	p := reports.Period{Month: month, Basis: cfg.DefaultBasis(), Granularity: cfg.Usage.Granularity}
	res.Statements, err = reports.Statements(ctx, cfg, pub.DB(), p, now, log)
	return err
}

// demoRevision is the demo interface's late correction: the 10th of the
// previous month, on one meter, tripled from an hour after now, so a month
// the demo closed changes afterwards.
func demoRevision(now time.Time) sim.Spike {
	return sim.Spike{Project: "newsroom", Meter: "streaming_egress_gb", Day: tally.Month.Truncate(now).AddDate(0, -1, 9), Factor: 3, From: now.Add(time.Hour)}
}

// demoSpike is the demo interface's cost jump, yesterday on one meter, for
// the anomaly check to find.
func demoSpike(now time.Time) sim.Spike {
	return sim.Spike{Project: "newsroom", Meter: "streaming_egress_gb", Day: tally.Day.Truncate(now).AddDate(0, 0, -1), Factor: 4}
}

// randomToken makes the demo's token JWT-shaped, as the platform's
// personal tokens are, expiring 300 days after now, so tally status shows
// its expiry: a random id and signature, nothing signed.
func randomToken(now time.Time) (string, error) {
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("make demo token: %w", err)
	}
	enc := base64.RawURLEncoding.EncodeToString
	payload := fmt.Sprintf(`{"sub":"demo","jti":"%s","exp":%d}`, hex.EncodeToString(b[:12]), now.AddDate(0, 0, 300).Unix())
	return enc([]byte(`{"alg":"HS256","typ":"JWT"}`)) + "." + enc([]byte(payload)) + "." + enc(b[12:]), nil
}
