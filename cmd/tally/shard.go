package main

import (
	"os"
	"strings"

	"github.com/rs/zerolog"
	"github.com/spf13/cobra"

	"github.com/tally-dev/tally/configs"
)

// shardUsage is --shard's help, the same on run and schedule.
const shardUsage = "take only the organizations whose stable hash falls in shard I of N (0 <= I < N <= 1024); /N takes I from $" +
	configs.ShardIndexEnv + " (a Kubernetes Indexed Job) (default $" + configs.ShardEnv + ", else every organization)"

// addShard registers --shard on cmd.
func addShard(cmd *cobra.Command, v *string) {
	cmd.Flags().StringVar(v, "shard", "", shardUsage)
}

// resolveShard reads --shard, or TALLY_SHARD when the flag is not given
// (the index from JOB_COMPLETION_INDEX when the spec leaves it out): the
// zero Shard when neither is set. A bad spec is bad usage (exit 2).
func resolveShard(cmd *cobra.Command, flag string) (configs.Shard, error) {
	if cmd.Flags().Changed("shard") && strings.TrimSpace(flag) == "" {
		return configs.Shard{}, usageErr("--shard %q: want I/N, e.g. 0/8, or leave the flag out to take every organization", flag)
	}
	s, err := configs.ParseShard(flag, os.Getenv)
	if err != nil {
		return configs.Shard{}, usageError{err}
	}
	return s, nil
}

// shardLog says which organizations cfg's shard takes, and returns log with
// the shard on every line (the pods of an Indexed Job log side by side).
func shardLog(log zerolog.Logger, cfg *configs.Config) zerolog.Logger {
	log = log.With().Str("shard", cfg.Shard.String()).Logger()
	names := cfg.ShardNames()
	if len(names) == 0 {
		log.Warn().Int("listed", cfg.Listed).Msgf("shard %s takes none of the config's %d organizations: its runs fetch nothing and do nothing else, and finish ok", cfg.Shard, cfg.Listed)
		return log
	}
	log.Info().Strs("organizations", names).Int("listed", cfg.Listed).Msgf("shard %s takes %d of the config's %d organizations: %s", cfg.Shard, len(names), cfg.Listed, strings.Join(names, ", "))
	return log
}
