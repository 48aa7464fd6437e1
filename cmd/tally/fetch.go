package main

import (
	"context"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/rs/zerolog"
	"github.com/spf13/cobra"

	"github.com/tally-dev/tally"
	"github.com/tally-dev/tally/configs"
	"github.com/tally-dev/tally/ingest"
	"github.com/tally-dev/tally/internal/secret"
	"github.com/tally-dev/tally/schedules"
	"github.com/tally-dev/tally/store"
)

func init() { commands = append(commands, newFetchCmd) }

func newFetchCmd(g *globalFlags) *cobra.Command {
	var cfgPath, from, to, gran, asOfText string
	var refetch bool
	cmd := &cobra.Command{
		Use:   "fetch --config FILE [--from DATE] [--to DATE] [--granularity G] [--refetch] [--as-of DATE]",
		Short: "Fetch due usage windows and reference data into the database",
		Long: `Plans the due windows from the ledger (missing windows, the lookback span,
today's partial window), fetches them concurrently, loads each in one
transaction, refreshes payment methods, rate cards, projects and locations, and
publishes the read-only copy analysts query. Exit 3 when some windows failed
after all retries: the others are kept and the next run fetches the rest.

--refetch --from D --to D fetches that range again although it is loaded
(when the provider revised charges older than usage.lookback), replacing its
windows as any fetch does; the run is recorded with command refetch. The
lookback rule is unchanged.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			asOf, err := resolveAsOf(asOfText)
			if err != nil {
				return err
			}
			r, err := newRunner(cmd, g, cfgPath, only("fetch"), configs.Shard{})
			if err != nil {
				return err
			}
			withAsOf(r, asOf)
			opts, err := fetchOptions(from, to, gran, refetch)
			if err != nil {
				return err
			}
			if r.Config.Usage.Source == tally.SourceProjects && (from != "" || to != "" || gran != "") {
				return usageErr("--from, --to and --granularity do not apply to usage.source projects: its report gives the month to date, read as it is now")
			}
			if _, err := opts.Resolve(r.Config, today(asOf)); err != nil {
				return usageError{err}
			}
			sum, err := fetchRun(cmd.Context(), r, opts)
			printFetchSummary(cmd, sum)
			return err
		},
	}
	cmd.Flags().StringVar(&cfgPath, "config", "", "config file (YAML)")
	cmd.Flags().StringVar(&from, "from", "", "first day, YYYY-MM-DD (default usage.start)")
	cmd.Flags().StringVar(&to, "to", "", "day after the last, YYYY-MM-DD, exclusive (default tomorrow, UTC)")
	cmd.Flags().StringVar(&gran, "granularity", "", "hour, day, week, month or year (default usage.granularity)")
	cmd.Flags().BoolVar(&refetch, "refetch", false, "fetch [--from, --to) again even where it is loaded (needs both)")
	addAsOf(cmd, &asOfText)
	return cmd
}

// loadConfig loads and validates the config; any problem is bad usage.
func loadConfig(path string) (*configs.Config, error) {
	if path == "" {
		return nil, usageErr("--config is required: the YAML file of configs/tally.example.yaml")
	}
	cfg, err := configs.Load(path, os.Getenv)
	if err != nil {
		return nil, usageError{err}
	}
	return cfg, nil
}

// stepsOf names the steps a command runs (schedule.jobs[].run's names),
// from its config: they say which secrets it needs.
type stepsOf func(cfg *configs.Config) []string

// only is a command that runs the given steps whatever its config.
func only(steps ...string) stepsOf { return func(*configs.Config) []string { return steps } }

// newRunner loads the config, reads the secrets the command's steps need
// (the API token only when one fetches: a command that sends nothing to
// the interface needs no token) and builds the job runner. A secret that
// cannot be read is bad configuration (exit 2), found before any step runs
// or the store is touched. A shard (tally run --shard) keeps the
// organizations it takes before anything reads them (configs.TakeShard):
// every step of its runs sees those alone.
func newRunner(cmd *cobra.Command, g *globalFlags, cfgPath string, steps stepsOf, shard configs.Shard) (*schedules.Runner, error) {
	cfg, err := loadConfig(cfgPath)
	if err != nil {
		return nil, err
	}
	if err := cfg.TakeShard(shard); err != nil {
		return nil, usageError{err}
	}
	run := steps(cfg)
	if err := cfg.CheckSecrets(os.Getenv, run); err != nil {
		return nil, usageError{err}
	}
	// usage.source lake fetches from the lake, not the interface: no token.
	fetches := slices.Contains(run, "fetch") && cfg.Usage.Source != tally.SourceLake
	log, err := newLogger(g, os.Stderr)
	if err != nil {
		return nil, err
	}
	for _, w := range cfg.Warnings {
		log.Warn().Msg(w)
	}
	if !shard.IsZero() {
		log = shardLog(log, cfg)
	}
	// store.path pointing at no folder or at a file that is not DuckDB is
	// bad configuration: exit 2, before any lock file is made beside it.
	if err := store.CheckPath(cfg.Store.Path); err != nil {
		return nil, usageError{err}
	}
	if !fetches {
		return &schedules.Runner{Config: cfg, CheckToken: ingest.CheckOrgToken, Log: log, Version: version, Commit: buildCommit(), Now: clock}, nil
	}
	if cfg.Grouped() {
		// Each organization's token is its own: one missing or expired
		// fails that organization in the run, not the others.
		r := &schedules.Runner{Config: cfg, CheckToken: ingest.CheckOrgToken, Log: log, Version: version, Commit: buildCommit(), Now: clock,
			Tokens: map[string]secret.Value{}, TokenErrs: map[string]error{}}
		for _, o := range cfg.Organizations {
			tok, err := cfg.OrgToken(o, os.Getenv)
			if err != nil {
				r.TokenErrs[o.Name] = err
				continue
			}
			r.Tokens[o.Name] = tok
		}
		return r, nil
	}
	token, err := cfg.Token(os.Getenv)
	if err != nil {
		return nil, usageError{err}
	}
	// An expired token stops every command that would send it, before
	// anything is sent; each run warns of one expiring soon.
	if err := ingest.CheckToken(cfg, token, clock().UTC(), zerolog.Nop()); err != nil {
		return nil, usageError{err}
	}
	return &schedules.Runner{Config: cfg, CheckToken: ingest.CheckOrgToken, Token: token, Log: log, Version: version, Commit: buildCommit(), Now: clock}, nil
}

// fetchOptions parses --from, --to and --granularity.
func fetchOptions(from, to, gran string, refetch bool) (ingest.FetchOptions, error) {
	if refetch && (from == "" || to == "") {
		return ingest.FetchOptions{}, usageErr("--refetch needs --from and --to: the days to fetch again, e.g. --refetch --from 2026-09-01 --to 2026-10-01 (a whole history is never fetched again by accident)")
	}
	o := ingest.FetchOptions{Refetch: refetch}
	var err error
	if from != "" {
		if o.From, err = tally.ParseDate(from); err != nil {
			return o, usageErr("--from: %v", err)
		}
	}
	if to != "" {
		if o.To, err = tally.ParseDate(to); err != nil {
			return o, usageErr("--to: %v", err)
		}
	}
	if gran != "" {
		if o.Granularity, err = tally.ParseGranularity(gran); err != nil {
			return o, usageErr("--granularity: %v", err)
		}
	}
	return o, nil
}

func printFetchSummary(cmd *cobra.Command, s ingest.FetchSummary) {
	out := cmd.OutOrStdout()
	switch {
	case s.Projects:
		fmt.Fprintf(out, "project reports: %d read of %d; estimated rows rebuilt: %d\n", s.Loaded, s.Planned, s.Rows)
	case s.Lake:
		fmt.Fprintf(out, "lake partitions: %d changed, %d loaded, %d failed\n", s.Planned, s.Loaded, len(s.Failed))
	default:
		fmt.Fprintf(out, "windows: %d planned, %d loaded, %d failed\n", s.Planned, s.Loaded, len(s.Failed))
	}
	fmt.Fprintf(out, "rows: %d   requests: %d   retries: %d   bytes: %d   time: %s\n",
		s.Rows, s.Requests, s.Retries, s.Bytes, s.Duration.Round(time.Millisecond))
	if s.Published != "" {
		fmt.Fprintf(out, "analysts' copy: %s\n", s.Published)
	}
}

// fetchRun is `tally fetch`: one recorded run of the fetch step with opts.
func fetchRun(ctx context.Context, r *schedules.Runner, opts ingest.FetchOptions) (ingest.FetchSummary, error) {
	var sum ingest.FetchSummary
	out, err := r.Record(ctx, ingest.Command(opts), "", ingest.Step(opts, &sum))
	sum.Published = out.Published
	return sum, err
}
