package main

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/google/uuid"
	"github.com/rs/zerolog"
	"github.com/spf13/cobra"

	"github.com/tally-dev/tally"
	"github.com/tally-dev/tally/alerts"
	"github.com/tally-dev/tally/configs"
	"github.com/tally-dev/tally/fetch"
	"github.com/tally-dev/tally/ingest"
	"github.com/tally-dev/tally/job"
	"github.com/tally-dev/tally/reports"
	"github.com/tally-dev/tally/schedules"
	"github.com/tally-dev/tally/store"
)

func init() { commands = append(commands, newStatusCmd) }

type statusOptions struct {
	config string
	format string
	asOf   string
	log    zerolog.Logger
}

func newStatusCmd(g *globalFlags) *cobra.Command {
	o := &statusOptions{}
	cmd := &cobra.Command{
		Use:   "status --config FILE [--as-of DATE] [--format table|json]",
		Short: "Show the last runs, the loaded windows and their gaps, and data freshness",
		Long: `Show the last runs (id, command, start, end, status, error), the span loaded
per granularity, basis and scope, the gaps between loaded windows, and how
fresh the data is: each organization's newest day holding usage, and a
STALE line when it is older than usage.stale_after (counted from today,
or --as-of); stale data is a warning, the exit code stays 0.

It reads the published copy of the database (what tally query reads), so it
never waits for a running fetch; it also says whether a run holds the
database's lock right now. Before the first fetch has published a copy, it
says so.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			log, err := newLogger(g, os.Stderr)
			if err != nil {
				return err
			}
			o.log = log
			return runStatus(cmd.Context(), o, cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.config, "config", "", "config file (YAML)")
	f.StringVar(&o.format, "format", "table", "output: table or json")
	addAsOf(cmd, &o.asOf)
	return cmd
}

// statusReport is everything `tally status` prints.
type statusReport struct {
	Database    string          `json:"database"`
	Published   string          `json:"published"`
	PublishedAt *time.Time      `json:"published_at"` // nil: no copy yet
	Writer      *store.LockInfo `json:"writer"`       // the run holding the lock, if any
	// TokenExpires is the api: form's token's expiry when it is a JWT
	// with an exp claim; nil for an opaque token, when none is set, and
	// with organizations: (see Tokens).
	TokenExpires *time.Time `json:"token_expires"`
	// Tokens are each organization's own token with organizations:.
	Tokens []statusToken `json:"tokens,omitempty"`
	// Jobs are the configured jobs with their latest runs (from the copy,
	// or noted beside the database when the lock was held) and next times.
	Jobs []schedules.JobStatus `json:"jobs"`
	// Budgets are the config's budgets in the current month, from the
	// copy; Problems say which budget names a scope and currency with no
	// usage, which makes the command exit 2.
	Budgets []statusBudget `json:"budgets"`
	// Source is usage.source; FirstProjectRead, with source projects, is
	// the first read of the per-project report: months before it cannot
	// be told.
	Source           string     `json:"source"`
	FirstProjectRead *time.Time `json:"first_project_read,omitempty"`
	// Closes are the months closed now, each with its current final
	// workbook and whether that file is in place.
	Closes   []statusClose `json:"closes"`
	Problems []string      `json:"problems,omitempty"`
	// AsOf is the day the status counts from, when --as-of gave one.
	AsOf string `json:"as_of,omitempty"`
	// Usage is how recent each organization's usage is (the store's for
	// the api: form), and Stale says which is older than
	// usage.stale_after: a warning, not a failure (the exit stays 0).
	Usage []alerts.Freshness `json:"usage_freshness"`
	Stale []string           `json:"stale,omitempty"`
	*store.Status
}

// statusToken is an organization's token as tally status shows it: read
// as a fetch reads it, its expiry when it is a JWT, and a warning when it
// cannot be read, is expired (a fetch then fetches nothing of the
// organization) or expires within api.token_warn_before.
type statusToken struct {
	Organization string     `json:"organization"`
	Expires      *time.Time `json:"expires"` // nil: an opaque token, or none read
	Warning      string     `json:"warning,omitempty"`
}

// statusTokens reads each organization's token of an organizations:
// config.
func statusTokens(cfg *configs.Config, now time.Time) []statusToken {
	var out []statusToken
	for _, o := range cfg.Organizations {
		st := statusToken{Organization: o.Name}
		where, field := ingest.TokenSource(cfg, o)
		where += " (" + field + ".token_env / " + field + ".token_file)"
		tok, err := cfg.OrgToken(o, os.Getenv)
		if err != nil {
			st.Warning = err.Error() + "; the next fetch does not fetch organization " + o.Name
			out = append(out, st)
			continue
		}
		if exp, ok := fetch.TokenExpiry(tok.Reveal()); ok {
			st.Expires = &exp
			switch left := exp.Sub(now); {
			case left <= 0:
				st.Warning = fmt.Sprintf("organization %s's API token expired on %s: the next fetch sends nothing with it and does not fetch %s; create a new personal API token in the web application and put it in %s",
					o.Name, statusTime(exp), o.Name, where)
			case left <= cfg.API.TokenWarnBefore:
				st.Warning = fmt.Sprintf("organization %s's API token expires in %.1f days, on %s (api.token_warn_before %s): create a new personal API token in the web application before then and put it in %s",
					o.Name, left.Hours()/24, statusTime(exp), fmtDays(cfg.API.TokenWarnBefore), where)
			}
		}
		out = append(out, st)
	}
	return out
}

// fmtDays writes a <n>d or <n>h setting as the config spells it.
func fmtDays(d time.Duration) string {
	if d%(24*time.Hour) == 0 {
		return fmt.Sprintf("%dd", d/(24*time.Hour))
	}
	return fmt.Sprintf("%dh", d/time.Hour)
}

// tokenNote says how long a token whose expiry is exp has left at now,
// and what to do when it is expired or within warn of it.
func tokenNote(exp time.Time, warn time.Duration, now time.Time) string {
	left := exp.Sub(now)
	note := fmt.Sprintf("in %.0f days", left.Hours()/24)
	switch {
	case left <= 0:
		note = "EXPIRED: create a new personal API token in the web application"
	case left <= warn:
		note += ": create a new personal API token in the web application soon"
	}
	return note
}

// statusClose is one closed month as tally status shows it.
type statusClose struct {
	// Organization is the organization closed on its own (or with its
	// group's close); "" for a close of every organization at once.
	Organization  string    `json:"organization,omitempty"`
	Month         string    `json:"month"`
	Basis         string    `json:"basis"`
	Granularity   string    `json:"granularity"`
	ClosedAt      time.Time `json:"closed_at"`
	By            string    `json:"by"`
	Reason        string    `json:"reason"`
	FinalWorkbook string    `json:"final_workbook"`
	FinalSHA256   string    `json:"final_sha256,omitempty"`
	// File is "in place", "missing", or "differs" (its bytes are not those
	// the close recorded).
	File string `json:"file"`
}

// statusCloses lists the months closed now, and whether each final
// workbook is the file the close recorded.
func statusCloses(ctx context.Context, st *store.Store) ([]statusClose, error) {
	closes, err := st.CurrentCloses(ctx)
	if err != nil {
		return nil, err
	}
	out := []statusClose{}
	for _, c := range closes {
		sc := statusClose{Organization: c.Organization, Month: c.Month.Format("2006-01"), Basis: string(c.Basis), Granularity: string(c.Granularity), ClosedAt: c.At,
			By: c.Who, Reason: c.Reason, FinalWorkbook: c.FinalWorkbook, FinalSHA256: c.FinalSHA256, File: "in place"}
		if b, err := os.ReadFile(c.FinalWorkbook); err != nil {
			sc.File = "missing: the next tally close, deliver or close step puts a killed close's staged file in place; otherwise restore it from a delivered copy"
		} else if c.FinalSHA256 != "" && fmt.Sprintf("%x", sha256.Sum256(b)) != c.FinalSHA256 {
			sc.File = "differs from what the close recorded: restore it from a delivered copy"
		}
		out = append(out, sc)
	}
	return out, nil
}

// statusBudget is one budget as tally status shows it.
type statusBudget struct {
	Name     string `json:"name"`
	Scope    string `json:"scope"`
	Currency string `json:"currency"`
	Amount   string `json:"amount"`
	Month    string `json:"month,omitempty"`
	AsOf     string `json:"as_of,omitempty"`   // the data's last complete day
	Through  string `json:"through,omitempty"` // the last day holding usage: actual includes it
	// ThroughText says whether that day is complete or partial, and
	// which fetched days after it held no usage.
	ThroughText   string  `json:"through_text,omitempty"`
	Actual        string  `json:"actual,omitempty"`
	Forecast      string  `json:"forecast,omitempty"`
	ActualRatio   float64 `json:"actual_ratio"`
	ForecastRatio float64 `json:"forecast_ratio"`
}

func runStatus(ctx context.Context, o *statusOptions, w io.Writer) error {
	if o.format != "table" && o.format != "json" {
		return usageErr("--format %q is not one of table, json", o.format)
	}
	if o.config == "" {
		return usageErr("--config is required: the config file whose data to show")
	}
	asOf, err := resolveAsOf(o.asOf)
	if err != nil {
		return err
	}
	cfg, err := loadConfig(o.config)
	if err != nil {
		return err
	}
	rep := statusReport{
		Source:    cfg.Usage.Source,
		Database:  cfg.Store.Path,
		Published: store.PublishedPath(cfg.Store.Path),
		Status:    &store.Status{Runs: []store.RunInfo{}, Spans: []store.Span{}, Gaps: []store.Gap{}, Jobs: []store.JobRun{}},
		Usage:     []alerts.Freshness{},
	}
	if !asOf.IsZero() {
		rep.AsOf = asOf.Format(tally.DateLayout)
	}
	if rep.Writer, err = store.LockHolder(cfg.Store.Path); err != nil {
		return err
	}
	if cfg.Usage.Source == tally.SourceLake {
		// A group job reading the lake holds no token.
	} else if cfg.Grouped() {
		// api.token_env is not used with organizations: each
		// organization's own token is what a fetch sends.
		rep.Tokens = statusTokens(cfg, time.Now())
	} else if token, err := cfg.Token(os.Getenv); err == nil {
		if exp, ok := fetch.TokenExpiry(token.Reveal()); ok {
			rep.TokenExpires = &exp
		}
	}
	fi, err := os.Stat(rep.Published)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return err
	default:
		t := fi.ModTime().UTC()
		rep.PublishedAt = &t
		st, err := schedules.OpenPublished(ctx, cfg, o.log)
		if err != nil {
			return err
		}
		defer st.Close()
		if rep.Status, err = st.Status(ctx); err != nil {
			return err
		}
		if err := statusBudgets(ctx, st, cfg, asOf, &rep); err != nil {
			return err
		}
		if rep.Usage, err = alerts.Staleness(ctx, st, cfg, today(asOf)); err != nil {
			return err
		}
		for _, f := range rep.Usage {
			if f.Stale {
				rep.Stale = append(rep.Stale, "STALE: "+f.Reason(cfg.Usage.StaleAfter))
			}
		}
		if rep.Closes, err = statusCloses(ctx, st); err != nil {
			return err
		}
		if cfg.Usage.Source == tally.SourceProjects {
			if rep.FirstProjectRead, err = st.FirstProjectSnapshot(ctx); err != nil {
				return err
			}
		}
	}
	pending, err := store.PendingRuns(cfg.Store.Path)
	if err != nil {
		return err
	}
	rep.Jobs = schedules.JobStatuses(cfg, rep.Status.Jobs, pending, time.Now())
	if o.format == "json" {
		b, err := json.MarshalIndent(rep, "", "  ")
		if err != nil {
			return fmt.Errorf("encode status: %w", err)
		}
		if _, err = w.Write(append(b, '\n')); err != nil {
			return err
		}
	} else if err := writeStatusTable(w, &rep, cfg); err != nil {
		return err
	}
	if len(rep.Problems) > 0 {
		return usageErr("%s", strings.Join(rep.Problems, "\n"))
	}
	return nil
}

// statusBudgets checks each budget against the copy: its figures this
// month, and a problem when its scope has no usage in its currency (a
// typo in a project name, or the wrong currency), which would otherwise
// read as a budget never reached. A replay's asOf (zero for none) shows
// them as they stood on its morning.
func statusBudgets(ctx context.Context, st *store.Store, cfg *configs.Config, asOf time.Time, rep *statusReport) error {
	if len(cfg.Budgets) == 0 {
		return nil
	}
	check, err := alerts.Evaluate(ctx, st, cfg, uuid.Nil, today(asOf), asOf, false)
	if err != nil {
		return err
	}
	for i, b := range check.Budgets {
		sb := statusBudget{Name: b.Budget.Name, Scope: b.Budget.ScopeText(), Currency: b.Budget.Currency, Amount: b.Budget.Amount.String()}
		if !b.Month.IsZero() {
			sb.Month, sb.AsOf = b.Month.Format("2006-01"), b.AsOf.Format(tally.DateLayout)
			sb.Through, sb.ThroughText = b.Through.LastUsageDay.Format(tally.DateLayout), b.Through.Label()
			sb.Actual, sb.Forecast = b.Actual.String(), b.Forecast.String()
			sb.ActualRatio, sb.ForecastRatio = b.ActualRatio(), b.ForecastRatio()
		}
		rep.Budgets = append(rep.Budgets, sb)
		have, err := st.ScopeCurrencies(ctx, b.Budget.ScopeKind, b.Budget.Scope)
		if err != nil {
			return err
		}
		if slices.Contains(have, b.Budget.Currency) {
			continue
		}
		where := fmt.Sprintf("budgets[%d].currency (budget %q)", i, b.Budget.Name)
		switch {
		case len(have) > 0:
			rep.Problems = append(rep.Problems, fmt.Sprintf("%s: %s never bills in %s; it bills in %s", where, b.Budget.ScopeText(), b.Budget.Currency, strings.Join(have, ", ")))
		case b.Budget.ScopeKind == "all":
			rep.Problems = append(rep.Problems, fmt.Sprintf("%s: no usage at hour or day granularity is loaded yet, so the budget cannot be checked", where))
		default:
			rep.Problems = append(rep.Problems, fmt.Sprintf("budgets[%d].scope (budget %q): %s has no usage at all; check the name (tally query \"SELECT DISTINCT scope FROM scope_daily_cost WHERE scope_kind = '%s'\")",
				i, b.Budget.Name, b.Budget.ScopeText(), b.Budget.ScopeKind))
		}
	}
	return nil
}

func writeStatusTable(w io.Writer, rep *statusReport, cfg *configs.Config) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "database\t%s\n", rep.Database)
	if rep.PublishedAt == nil {
		fmt.Fprintf(tw, "published\tnone yet: tally fetch --config %s creates %s at the end of its run\n", cfg.Path, rep.Published)
	} else {
		fmt.Fprintf(tw, "published\t%s (%s)\n", rep.Published, statusTime(*rep.PublishedAt))
	}
	if h := rep.Writer; h != nil {
		fmt.Fprintf(tw, "running now\tpid %d, command %q, since %s (not in the published copy yet)\n", h.PID, h.Command, statusTime(h.Started))
	} else {
		fmt.Fprintf(tw, "running now\tnothing\n")
	}
	if exp := rep.TokenExpires; exp != nil {
		fmt.Fprintf(tw, "token expires\t%s (%s)\n", statusTime(*exp), tokenNote(*exp, cfg.API.TokenWarnBefore, time.Now()))
	}
	for _, tk := range rep.Tokens {
		switch {
		case tk.Expires != nil:
			fmt.Fprintf(tw, "token expires (%s)\t%s (%s)\n", tk.Organization, statusTime(*tk.Expires), tokenNote(*tk.Expires, cfg.API.TokenWarnBefore, time.Now()))
		case tk.Warning != "":
			fmt.Fprintf(tw, "token (%s)\tNOT READ: %s\n", tk.Organization, statusOneLine(tk.Warning))
		}
	}
	if cfg.Usage.Source == tally.SourceLake {
		fmt.Fprintf(tw, "source\tlake: the usage of %d organization(s) as their shards exported it to the lake's table %s.usage; each fetch loads the partitions whose files changed (lake_loads)\n",
			len(cfg.Organizations), cfg.Lake.Namespace)
	}
	if cfg.Usage.Source == tally.SourceProjects {
		first := "none yet"
		if rep.FirstProjectRead != nil {
			first = "first read " + statusTime(*rep.FirstProjectRead)
		}
		_, names := projectNames(cfg)
		fmt.Fprintf(tw, "source\tprojects %s: %s; %s. Months before the first read cannot be told: the per-project report gives only the month to date\n",
			names, reports.EstimatedWarning, first)
	}
	writeStatusJobs(tw, rep, cfg)
	if rep.PublishedAt == nil {
		return tw.Flush()
	}

	fmt.Fprintf(tw, "\nLAST RUNS\n")
	if len(rep.Runs) == 0 {
		fmt.Fprintf(tw, "none\n")
	} else {
		// AS OF is the day a replay (--as-of) counted as today; "-" for a
		// run as of its own day.
		fmt.Fprintf(tw, "ID\tCOMMAND\tJOB\tSTARTED\tFINISHED\tAS OF\tSTATUS\tROWS\tWINDOWS\tERROR\n")
		for _, r := range rep.Runs {
			finished, asOf := "-", "-"
			if r.Finished != nil {
				finished = statusTime(*r.Finished)
			}
			if r.AsOf != nil {
				asOf = r.AsOf.Format(tally.DateLayout)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%d\t%s\n", r.ID, r.Command, statusDash(r.Job), statusTime(r.Started), finished,
				asOf, r.Status, r.Rows, r.Windows, statusDash(statusOneLine(r.Error)))
		}
		// Warnings of the latest run: what it went on without.
		if w := rep.Runs[0].Warnings; len(w) > 0 {
			fmt.Fprintf(tw, "\nWARNINGS of the latest run\n")
			for _, line := range w {
				fmt.Fprintf(tw, "%s\n", line)
			}
		}
	}

	fmt.Fprintf(tw, "\nLOADED (start inclusive, end exclusive)\n")
	if len(rep.Spans) == 0 {
		fmt.Fprintf(tw, "nothing yet\n")
	} else {
		orgs := severalOrgs(rep.Spans)
		if orgs {
			fmt.Fprintf(tw, "ORGANIZATION\t")
		}
		fmt.Fprintf(tw, "GRANULARITY\tBASIS\tSCOPE\tSTART\tEND\tWINDOWS\tROWS\tLAST FETCHED\n")
		for _, s := range rep.Spans {
			if orgs {
				fmt.Fprintf(tw, "%s\t", s.Organization)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%d\t%s\n", s.Granularity, s.Basis, s.Scope,
				s.Start.Format(tally.DateLayout), s.End.Format(tally.DateLayout), s.Windows, s.Rows, statusTime(s.LastFetchedAt))
		}
	}

	fmt.Fprintf(tw, "\nGAPS (not loaded between loaded windows)\n")
	if len(rep.Gaps) == 0 {
		fmt.Fprintf(tw, "none\n")
	} else {
		fmt.Fprintf(tw, "GRANULARITY\tBASIS\tSCOPE\tSTART\tEND\tDAYS\n")
		for _, g := range rep.Gaps {
			scope := g.Scope
			if severalOrgs(rep.Spans) {
				scope = "organization " + g.Organization + ": " + scope
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\n", g.Granularity, g.Basis, scope,
				g.Start.Format(tally.DateLayout), g.End.Format(tally.DateLayout), int(g.End.Sub(g.Start).Hours()/24))
		}
	}

	if len(rep.Budgets) > 0 {
		fmt.Fprintf(tw, "\nBUDGETS (this month; see tally alerts)\n")
		fmt.Fprintf(tw, "NAME\tSCOPE\tAMOUNT\tMONTH\tACTUAL\t%%\tFORECAST\t%%\tTHROUGH\n")
		for _, b := range rep.Budgets {
			fmt.Fprintf(tw, "%s\t%s\t%s %s\t%s\t%s\t%.1f\t%s\t%.1f\t%s\n", b.Name, b.Scope, b.Amount, b.Currency, statusDash(b.Month),
				statusDash(b.Actual), b.ActualRatio*100, statusDash(b.Forecast), b.ForecastRatio*100, statusDash(b.ThroughText))
		}
		for _, p := range rep.Problems {
			fmt.Fprintf(tw, "PROBLEM: %s\n", p)
		}
	}

	fmt.Fprintf(tw, "\nCLOSED MONTHS (tally close; the final workbook in force)\n")
	if len(rep.Closes) == 0 {
		fmt.Fprintf(tw, "none\n")
	} else {
		orgs := false
		for _, c := range rep.Closes {
			orgs = orgs || c.Organization != ""
		}
		if orgs {
			fmt.Fprintf(tw, "MONTH\tORGANIZATION\tBASIS\tGRANULARITY\tCLOSED\tBY\tFINAL WORKBOOK\tFILE\n")
		} else {
			fmt.Fprintf(tw, "MONTH\tBASIS\tGRANULARITY\tCLOSED\tBY\tFINAL WORKBOOK\tFILE\n")
		}
		for _, c := range rep.Closes {
			if orgs {
				org := c.Organization
				if org == "" {
					org = "(group)"
				}
				fmt.Fprintf(tw, "%s\t%s\t", c.Month, org)
			} else {
				fmt.Fprintf(tw, "%s\t", c.Month)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", c.Basis, c.Granularity, statusTime(c.ClosedAt), c.By, c.FinalWorkbook, c.File)
		}
	}

	f := rep.Freshness
	fmt.Fprintf(tw, "\nFRESHNESS\n")
	fmt.Fprintf(tw, "last fetched\t%s\n", statusTimeOrNone(f.LastFetchedAt))
	fmt.Fprintf(tw, "latest usage\t%s\n", statusTimeOrNone(f.LatestUsageDate))
	fmt.Fprintf(tw, "latest charge\t%s\n", statusTimeOrNone(f.LatestDateProcessed))
	for _, u := range rep.Usage {
		// "newest day" is no wider than the labels above: the column
		// keeps its width.
		label := "newest day"
		if cfg.Grouped() {
			label += " of " + u.Organization
		}
		fmt.Fprintf(tw, "%s\t%s (%d days old", label, u.NewestDay.Format(tally.DateLayout), u.AgeDays)
		if rep.AsOf != "" {
			fmt.Fprintf(tw, " as of %s", rep.AsOf)
		}
		fmt.Fprintf(tw, "; stale after %s)\n", job.DurationText(cfg.Usage.StaleAfter))
	}
	for _, s := range rep.Stale {
		fmt.Fprintf(tw, "%s\n", s)
	}
	return tw.Flush()
}

func statusTime(t time.Time) string { return t.UTC().Format(time.RFC3339) }

func statusTimeOrNone(t *time.Time) string {
	if t == nil {
		return "none"
	}
	return statusTime(*t)
}

func statusDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// statusOneLine keeps a multi-line error on its table row.
func statusOneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// writeStatusJobs lists each configured job's latest run and next time.
func writeStatusJobs(tw io.Writer, rep *statusReport, cfg *configs.Config) {
	fmt.Fprintf(tw, "\nJOBS (schedule.jobs; times UTC)\n")
	if len(rep.Jobs) == 0 {
		fmt.Fprintf(tw, "none\n")
		return
	}
	fmt.Fprintf(tw, "JOB\tCRON\tSTEPS\tLAST RUN\tSTATUS\tFINISHED\tLAST SUCCESS\tNEXT\tERROR\n")
	pending := false
	for _, j := range rep.Jobs {
		last, status, finished, errText := "never", "-", "-", "-"
		if r := j.LastRun; r != nil {
			last, status, errText = r.ID.String(), r.Status, statusDash(statusOneLine(r.Error))
			if r.Finished != nil {
				finished = statusTime(*r.Finished)
			}
			if j.Pending {
				status += "*"
				pending = true
			}
		}
		next := "never"
		if j.Next != nil {
			next = statusTime(*j.Next)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", j.Job, j.Cron, strings.Join(j.Steps, ","), last, status, finished,
			statusTimeOrNone(j.LastSuccess), next, errText)
	}
	if pending {
		fmt.Fprintf(tw, "* noted in %s while another process held the database; the next run records it in runs\n", store.JournalPath(cfg.Store.Path))
	}
}

// severalOrgs reports whether the loaded spans are of more than one
// organization: then status names the organization of each.
func severalOrgs(spans []store.Span) bool {
	for _, s := range spans {
		if s.Organization != spans[0].Organization {
			return true
		}
	}
	return false
}
