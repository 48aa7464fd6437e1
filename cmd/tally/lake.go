package main

import (
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/tally-dev/tally/export"
	"github.com/tally-dev/tally/lake"
)

func init() { commands = append(commands, newLakeCmd) }

// newLakeCmd is tally lake, whose one subcommand is maintain: the usage
// line is the subcommand's, as README lists it.
func newLakeCmd(g *globalFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "lake maintain --config FILE [--dry-run]",
		Short: "Look after the Iceberg lake that export format iceberg commits to",
		Args:  cobra.NoArgs,
	}
	var config string
	var dry bool
	maintain := &cobra.Command{
		Use:   "maintain --config FILE [--dry-run]",
		Short: "Expire old snapshots and delete files no snapshot holds",
		Long: `Expire the usage table's snapshots older than lake.keep_snapshots (default
7d), never the current one, deleting the files only they held (the
partitions' files that later exports replaced), and delete the files under
the table's folder that no snapshot holds and that are older than
lake.orphan_age (default 3d, at least 1d): those of exports a kill cut
short. Expiring is a commit like an export's, redone when another writer
committed first, and a file younger than lake.orphan_age is never taken,
so it is safe beside running exports. --dry-run says what it would do and
changes nothing. It runs tally-lake, as export format iceberg does.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			log, err := newLogger(g, os.Stderr)
			if err != nil {
				return err
			}
			if config == "" {
				return usageErr("--config is required")
			}
			cfg, err := loadConfig(config)
			if err != nil {
				return err
			}
			if err := cfg.Lake.CheckSecrets(os.Getenv); err != nil {
				return usageError{err}
			}
			m, err := export.MaintainLake(cmd.Context(), cfg, cfg.Export.Dir, dry, log)
			if err != nil {
				return fmt.Errorf("lake maintain: %w", err)
			}
			printMaintained(cmd, m, cfg.Lake.KeepSnapshots, cfg.Lake.OrphanAge)
			return nil
		},
	}
	f := maintain.Flags()
	f.StringVar(&config, "config", "", "config file (YAML)")
	f.BoolVar(&dry, "dry-run", false, "say what would be expired and deleted; change nothing")
	cmd.AddCommand(maintain)
	return cmd
}

func printMaintained(cmd *cobra.Command, m lake.Maintained, keep, orphanAge time.Duration) {
	w := cmd.OutOrStdout()
	expired, deleted := "expired", "deleted"
	if m.DryRun {
		expired, deleted = "would expire", "would delete"
	}
	fmt.Fprintf(w, "lake %s%s\n", m.Table, map[bool]string{true: " (dry run: nothing changed)"}[m.DryRun])
	fmt.Fprintf(w, "  snapshots older than %s: %d %s, %d kept\n", days(keep), m.Expired, expired, m.Snapshots)
	fmt.Fprintf(w, "  files no snapshot holds, older than %s: %d %s, %d bytes\n", days(orphanAge), m.Orphans, deleted, m.OrphanBytes)
}

// days writes a config span as the config does: <n>d, or <n>h.
func days(d time.Duration) string {
	if d%(24*time.Hour) == 0 {
		return fmt.Sprintf("%dd", d/(24*time.Hour))
	}
	return fmt.Sprintf("%dh", d/time.Hour)
}
