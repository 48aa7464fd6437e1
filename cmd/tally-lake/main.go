// Command tally-lake commits Tally's Parquet files to its Apache Iceberg
// tables. tally runs it during an export to the lake (tally export
// --format iceberg, the export step), to maintain it and, for usage.source
// lake, to list the files a group job reads: it is a program of its own so that
// tally does not carry Iceberg's library (package lake says why). It is
// not meant to be run by hand.
//
//	tally-lake state|replace|files|download|maintain   a lake.Request as JSON on standard input
//	tally-lake version
//
// The answer (lake.State, lake.Commit, lake.Files, lake.Downloaded, lake.Maintained) is JSON on standard output; its log
// is JSON lines on standard error, which tally logs as its own, without
// the request's secrets (the catalog's password, the S3 keys). It exits 1
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
	"strings"
	"sync"
	"syscall"

	"github.com/apache/iceberg-go"
	"github.com/rs/zerolog"

	"github.com/tally-dev/tally/lake"
	"github.com/tally-dev/tally/lake/ice"
)

// version is stamped at build time, as tally's (scripts/build).
var version = "dev"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	// Every line goes through out, which drops the request's secrets
	// once it is read: a driver or a server may quote one back in an
	// error, and tally would log it as it is.
	out := &redactor{w: stderr}
	log := zerolog.New(out).With().Timestamp().Logger()
	// iceberg-go warns through log/slog: as this program's log, in JSON.
	slog.SetDefault(slog.New(zerolog.NewSlogHandler(log)))
	if len(args) != 1 {
		log.Error().Msg("tally-lake: give one of state, replace, files, download, maintain or version, and the request as JSON on standard input")
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
	out.hide(req.Catalog.Password)
	if s := req.Catalog.S3; s != nil {
		out.hide(s.AccessKey, s.SecretKey)
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
	if req.Op != "state" && req.Op != "replace" && req.Op != "maintain" && req.Op != "files" && req.Op != "download" {
		return nil, fmt.Errorf("tally-lake: op %q is not one of state, replace, files, download, maintain", req.Op)
	}
	if req.Table == "" || len(req.Columns) == 0 && (req.Op == "state" || req.Op == "replace") {
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
	if req.Op == "download" {
		return l.Download(ctx, req.Table, req.Files, req.Dir)
	}
	if req.Op == "state" {
		return l.State(ctx, req.Table, req.Columns, req.Source)
	}
	table := l.Namespace() + "." + req.Table
	c, err := l.Replace(ctx, ice.Replacement{
		Table: req.Table, Columns: req.Columns, Partitions: req.Partitions, Files: req.Files, Uploads: req.Uploads,
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

// redactor writes log lines to w with every hidden text replaced.
type redactor struct {
	w       io.Writer
	mu      sync.Mutex
	secrets []string
}

func (r *redactor) hide(secrets ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range secrets {
		if s != "" {
			r.secrets = append(r.secrets, s)
			// As a JSON string holds it, for a secret with a quote,
			// a backslash or a control character.
			if b, err := json.Marshal(s); err == nil && string(b[1:len(b)-1]) != s {
				r.secrets = append(r.secrets, string(b[1:len(b)-1]))
			}
		}
	}
}

func (r *redactor) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	line := string(p)
	for _, s := range r.secrets {
		line = strings.ReplaceAll(line, s, "[redacted]")
	}
	if _, err := io.WriteString(r.w, line); err != nil {
		return 0, err
	}
	return len(p), nil
}
