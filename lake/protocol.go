package lake

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/rs/zerolog"
)

// Keys of a Tally snapshot's summary. RunID and Version say which Tally
// run committed it; Source and ChangesThrough say whose changes it holds
// up to when, so the next export of that database commits only the ones
// after.
const (
	SummaryRunID          = "tally.run-id"
	SummaryVersion        = "tally.version"
	SummarySource         = "tally.source"
	SummaryChangesThrough = "tally.changes-through"
	SummaryPartitions     = "tally.partitions"
)

// Config says where the lake is: a catalog (SQLite or PostgreSQL) and
// a warehouse.
type Config struct {
	// SQLite is the SQLite catalog's file (lake.catalog sqlite:PATH),
	// absolute; created when missing.
	SQLite string `json:"sqlite,omitempty"`
	// Postgres is the PostgreSQL catalog's database URL (lake.catalog
	// postgres://…), never holding the password; Password is the
	// password (lake.password_env or password_file), "" for none or
	// ~/.pgpass. It travels only on tally-lake's standard input.
	Postgres string `json:"postgres,omitempty"`
	Password string `json:"password,omitempty"`
	// Warehouse is where the tables' data and metadata files go: a local
	// folder, absolute, created when missing; or s3://BUCKET[/PREFIX],
	// reached as S3 says.
	Warehouse string `json:"warehouse"`
	// S3 is how to reach a warehouse on S3; nil for a folder.
	S3 *S3 `json:"s3,omitempty"`
	// Namespace holds the tables; "" is the default, tally.
	Namespace string `json:"namespace,omitempty"`
}

// S3 is how tally-lake reaches a warehouse on S3 (lake.s3). The keys
// (lake.s3.access_key_env|file, secret_key_env|file), like the catalog's
// password, travel only on tally-lake's standard input; without them the
// AWS SDK's own chain is used.
type S3 struct {
	Endpoint  string `json:"endpoint,omitempty"` // "" for AWS's, for the region
	Region    string `json:"region,omitempty"`
	PathStyle bool   `json:"path_style,omitempty"` // HOST/BUCKET/KEY rather than BUCKET.HOST/KEY
	AccessKey string `json:"access_key,omitempty"`
	SecretKey string `json:"secret_key,omitempty"`
}

// OnS3 says whether a table location or warehouse is on S3.
func OnS3(location string) bool { return strings.HasPrefix(location, "s3://") }

// Upload is a file tally wrote on its own disk, From, that tally-lake
// copies to To, under the table's data folder on S3, before it commits
// To: DuckDB, as tally links it, writes no further than a local file.
type Upload struct {
	From string `json:"from"` // an absolute path
	To   string `json:"to"`   // s3://…, one of the request's Files
}

// Partition is one partition of the usage table: an organization's month.
type Partition struct {
	Organization string    `json:"organization"`
	Month        time.Time `json:"month"` // the month's first day, UTC
}

func (p Partition) String() string {
	return fmt.Sprintf("%q %s", p.Organization, p.Month.Format("2006-01"))
}

// Request is what tally asks of tally-lake, as JSON on its standard
// input: Op "state" (the table's location and what it holds from Source),
// "replace" (swap Files in for Partitions' files, in one snapshot whose
// summary carries Properties, once Uploads are copied to where Files name
// them), "files" (the current snapshot's files), "download" (copy Files,
// data files of the table, into the local folder Dir) or "maintain".
type Request struct {
	Op         string            `json:"op"`
	Catalog    Config            `json:"catalog"`
	Table      string            `json:"table"`
	Columns    []Column          `json:"columns"`
	Source     string            `json:"source,omitempty"`
	Partitions []Partition       `json:"partitions,omitempty"`
	Files      []string          `json:"files,omitempty"`
	Uploads    []Upload          `json:"uploads,omitempty"`
	Properties map[string]string `json:"properties,omitempty"`
	// Dir is op "download"'s local folder, which must exist.
	Dir string `json:"dir,omitempty"`
	// Op "maintain": expire the snapshots older than KeepSnapshots (never
	// the current one), delete the files no snapshot holds once older
	// than OrphanAge; with DryRun, only say what it would do.
	KeepSnapshots time.Duration `json:"keep_snapshots,omitempty"`
	OrphanAge     time.Duration `json:"orphan_age,omitempty"`
	DryRun        bool          `json:"dry_run,omitempty"`
}

// Downloaded is tally-lake's answer to "download": where each file of the
// request went, by its URI.
type Downloaded struct {
	Files map[string]string `json:"files"`
}

// Maintained is tally-lake's answer to "maintain".
type Maintained struct {
	Table       string `json:"table"`
	Expired     int    `json:"expired"` // snapshots expired (or, dry, that would be)
	Snapshots   int    `json:"snapshots"`
	Orphans     int    `json:"orphans"` // files deleted (or, dry, that would be)
	OrphanBytes int64  `json:"orphan_bytes"`
	DryRun      bool   `json:"dry_run"`
}

// State is tally-lake's answer to "state": the table (created when the
// catalog lacked it) and the latest commit from the request's source.
type State struct {
	Table string `json:"table"` // namespace.table
	// Location is the table's folder: data files go under its data
	// folder.
	Location string `json:"location"`
	// Found is whether a snapshot, from the current one back, holds a
	// commit from the source; ChangesThrough the time of the latest
	// change it holds.
	Found          bool      `json:"found"`
	ChangesThrough time.Time `json:"changes_through"`
}

// Files is tally-lake's answer to "files": the table's current snapshot
// and its data files by partition, for usage.source lake, which reads
// them itself.
type Files struct {
	Table      string           `json:"table"` // namespace.table
	Found      bool             `json:"found"` // the catalog holds the table
	SnapshotID int64            `json:"snapshot_id"`
	Partitions []PartitionFiles `json:"partitions"` // by month, then organization
}

// PartitionFiles are one partition's data files (URIs, sorted) and the
// rows they hold.
type PartitionFiles struct {
	Partition
	Files []string `json:"files"`
	Rows  int64    `json:"rows"`
}

// Commit is tally-lake's answer to "replace".
type Commit struct {
	SnapshotID int64 `json:"snapshot_id"` // 0 when nothing was committed
	Attempts   int   `json:"attempts"`    // 1, or more when lost races were redone
	Dropped    int   `json:"dropped"`     // the partitions' files the snapshot dropped
}

// HelperName is the catalog program's name: tally looks for it beside
// its own executable, then on PATH.
const HelperName = "tally-lake"

// FindHelper is the path of the tally-lake program: beside the running
// tally, or on PATH.
func FindHelper() (string, error) {
	if exe, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(exe), HelperName)
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return p, nil
		}
	}
	if p, err := exec.LookPath(HelperName); err == nil {
		return p, nil
	}
	return "", fmt.Errorf("lake: the program %s, which commits to the Iceberg catalog, is neither beside tally nor on PATH: build it with scripts/build (or go build ./cmd/tally-lake) and put it beside tally", HelperName)
}

// Call runs the helper at path on req and decodes its answer into out.
// The helper's log lines (JSON, on its standard error) go to log at their
// level, so they read as the run's; its error, when it fails, is the
// last error line it logged.
func Call(ctx context.Context, path string, req Request, out any, log zerolog.Logger) error {
	in, err := json.Marshal(req)
	if err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, path, req.Op)
	cmd.Stdin = bytes.NewReader(in)
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("lake: start %s: %w", path, err)
	}
	var failure string
	sc := bufio.NewScanner(stderr)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if msg, isErr := relog(log, sc.Bytes()); isErr {
			failure = msg
		}
	}
	werr := cmd.Wait()
	if werr != nil {
		if failure != "" {
			return errors.New(failure)
		}
		return fmt.Errorf("lake: %s %s: %w", filepath.Base(path), req.Op, werr)
	}
	if err := json.Unmarshal(stdout.Bytes(), out); err != nil {
		return fmt.Errorf("lake: %s %s answered %q: %w", filepath.Base(path), req.Op, strings.TrimSpace(stdout.String()), err)
	}
	return nil
}

// relog logs one of the helper's lines through log, and says whether it
// was an error and its message. A line that is not JSON is logged as a
// warning, as it is.
func relog(log zerolog.Logger, line []byte) (string, bool) {
	var fields map[string]any
	if err := json.Unmarshal(line, &fields); err != nil {
		log.Warn().Str("program", HelperName).Msg(string(line))
		return "", false
	}
	lvl, _ := zerolog.ParseLevel(fmt.Sprint(fields[zerolog.LevelFieldName]))
	msg := fmt.Sprint(fields[zerolog.MessageFieldName])
	for _, k := range []string{zerolog.LevelFieldName, zerolog.MessageFieldName, zerolog.TimestampFieldName} {
		delete(fields, k)
	}
	if lvl == zerolog.NoLevel {
		lvl = zerolog.InfoLevel
	}
	log.WithLevel(lvl).Fields(fields).Msg(msg)
	return msg, lvl >= zerolog.ErrorLevel
}
