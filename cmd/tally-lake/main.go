// Command tally-lake commits Tally's Parquet files to its Apache Iceberg
// tables. tally runs it during an export to the lake (tally export
// --format iceberg, the export step), to maintain it and, for usage.source
// lake, to list the files a group job reads: it is a program of its own so that
// tally does not carry Iceberg's library (package lake says why). It is
// not meant to be run by hand.
//
//	tally-lake state|replace|files|maintain   a lake.Request as JSON on standard input
//	tally-lake version
//
// The answer (lake.State, lake.Commit, lake.Files, lake.Maintained) is JSON on standard output; its log
// is JSON lines on standard error, which tally logs as its own. It exits 1
// when the request fails, 2 when it is not one it knows.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/apache/iceberg-go"
	"github.com/rs/zerolog"

	"github.com/tally-dev/tally/lake"
	"github.com/tally-dev/tally/lake/ice"
)

// version is stamped at build time, as tally's (scripts/build).
var version = "dev"

func main() {
	log := zerolog.New(os.Stderr).With().Timestamp().Logger()
	// iceberg-go warns through log/slog: as this program's log, in JSON.
	slog.SetDefault(slog.New(zerolog.NewSlogHandler(log)))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdin, os.Stdout, log))
}

func run(ctx context.Context, args []string, stdin io.Reader, stdout io.Writer, log zerolog.Logger) int {
	if len(args) != 1 {
		log.Error().Msg("tally-lake: give one of state, replace, files, maintain or version, and the request as JSON on standard input")
		return 2
	}
	if args[0] == "version" {
		fmt.Fprintf(stdout, "tally-lake %s\n", version)
		return 0
	}
	var req lake.Request
	dec := json.NewDecoder(stdin)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		log.Error().Msgf("tally-lake: read the request: %v", err)
		return 2
	}
	if req.Op != args[0] {
		log.Error().Msgf("tally-lake: the request's op %q is not the command %q", req.Op, args[0])
		return 2
	}
	answer, err := serve(ctx, req, log)
	if err != nil {
		log.Error().Msg(err.Error())
		return 1
	}
	if err := json.NewEncoder(stdout).Encode(answer); err != nil {
		log.Error().Msgf("tally-lake: write the answer: %v", err)
		return 1
	}
	return 0
}

func serve(ctx context.Context, req lake.Request, log zerolog.Logger) (any, error) {
	if req.Op != "state" && req.Op != "replace" && req.Op != "maintain" && req.Op != "files" {
		return nil, fmt.Errorf("tally-lake: op %q is not one of state, replace, files, maintain", req.Op)
	}
	if req.Table == "" || len(req.Columns) == 0 && req.Op != "maintain" && req.Op != "files" {
		return nil, errors.New("tally-lake: the request names no table or no columns")
	}
	l, err := ice.Open(ctx, req.Catalog)
	if err != nil {
		return nil, err
	}
	defer l.Close()
	if req.Op == "maintain" {
		return l.Maintain(ctx, req.Table, req.KeepSnapshots, req.OrphanAge, req.DryRun)
	}
	if req.Op == "files" {
		return l.Files(ctx, req.Table)
	}
	if req.Op == "state" {
		return l.State(ctx, req.Table, req.Columns, req.Source)
	}
	table := l.Namespace() + "." + req.Table
	c, err := l.Replace(ctx, ice.Replacement{
		Table: req.Table, Columns: req.Columns, Partitions: req.Partitions, Files: req.Files,
		Properties: iceberg.Properties(req.Properties),
		Retried: func(attempt int, err error) {
			log.Warn().Str("table", table).Int("attempt", attempt).Int("max_attempts", ice.MaxAttempts).Err(err).
				Msg("lake: another writer committed first; reloading the table and redoing the commit")
		},
	})
	if err != nil {
		return nil, fmt.Errorf("lake: commit to %s: %w", table, err)
	}
	return c, nil
}
